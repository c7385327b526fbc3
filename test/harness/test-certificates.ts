/**
 * A certificate authority, a broker certificate for 127.0.0.1 and a client certificate, made with
 * Java's keytool as an operator would (PKCS#12 keystores for the broker), with the client's key
 * also exported as PEM by openssl. A second, untrusted CA is there for the failure tests.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface TestCertificates {
  /** Store and key password of every keystore. */
  storePassword: string;
  /** PEM of the CA that signed the broker's and the client's certificates. */
  caPem: string;
  /** PEM of a CA that signed nothing here. */
  otherCaPem: string;
  /** The broker's PKCS#12 keystore (its key and certificate chain) and truststore (the CA). */
  brokerKeystore: string;
  brokerTruststore: string;
  /** The client's PKCS#12 keystore, and the same certificate and key as PEM files. */
  clientKeystore: string;
  clientCertPem: string;
  clientKeyPem: string;
}

export async function makeTestCertificates(folder: string): Promise<TestCertificates> {
  const storePassword = 'store-password-1';
  const keytool = (...args: string[]) => run('keytool', [...args, '-storepass', storePassword], { timeout: 60_000 });
  const at = (name: string) => join(folder, name);
  const newCa = async (name: string) => {
    await keytool(
      '-genkeypair',
      '-alias',
      'ca',
      '-dname',
      `CN=${name}`,
      '-ext',
      'bc:c',
      '-keyalg',
      'RSA',
      '-keysize',
      '2048',
      '-validity',
      '2',
      '-keystore',
      at(`${name}.p12`),
      '-storetype',
      'PKCS12',
    );
    await keytool('-exportcert', '-rfc', '-alias', 'ca', '-keystore', at(`${name}.p12`), '-file', at(`${name}.pem`));
    return at(`${name}.pem`);
  };
  /** A key pair in its own keystore, signed by the CA, with the CA and the signed chain imported back. */
  const signed = async (name: string, dname: string, extensions: string[]) => {
    const store = at(`${name}.p12`);
    await keytool(
      '-genkeypair',
      '-alias',
      name,
      '-dname',
      dname,
      '-keyalg',
      'RSA',
      '-keysize',
      '2048',
      '-validity',
      '2',
      '-keystore',
      store,
      '-storetype',
      'PKCS12',
    );
    await keytool('-certreq', '-alias', name, '-keystore', store, '-file', at(`${name}.csr`));
    await keytool(
      '-gencert',
      '-alias',
      'ca',
      '-keystore',
      at('weir-test-ca.p12'),
      '-infile',
      at(`${name}.csr`),
      '-outfile',
      at(`${name}.pem`),
      '-rfc',
      '-validity',
      '2',
      ...extensions,
    );
    await keytool('-importcert', '-noprompt', '-alias', 'ca', '-file', at('weir-test-ca.pem'), '-keystore', store);
    await keytool('-importcert', '-alias', name, '-file', at(`${name}.pem`), '-keystore', store);
    return store;
  };
  const caPem = await newCa('weir-test-ca');
  const otherCaPem = await newCa('weir-other-ca');
  const brokerKeystore = await signed('broker', 'CN=127.0.0.1', ['-ext', 'SAN=ip:127.0.0.1,dns:localhost']);
  const clientKeystore = await signed('client', 'CN=weir-client', []);
  const brokerTruststore = at('truststore.p12');
  await keytool('-importcert', '-noprompt', '-alias', 'ca', '-file', caPem, '-keystore', brokerTruststore, '-storetype', 'PKCS12');
  const clientKeyPem = at('client-key.pem');
  await run('openssl', ['pkcs12', '-in', clientKeystore, '-nocerts', '-nodes', '-passin', `pass:${storePassword}`, '-out', clientKeyPem], { timeout: 60_000 });
  return { storePassword, caPem, otherCaPem, brokerKeystore, brokerTruststore, clientKeystore, clientCertPem: at('client.pem'), clientKeyPem };
}
