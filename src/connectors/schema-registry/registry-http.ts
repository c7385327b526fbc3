/**
 * One HTTP request to a Schema Registry, answered (never rejected) with its status and body or,
 * when no answer came, status 0 and the reason. Self-contained on purpose: the synchronous path
 * (sync-registry-http.ts) runs this same function's source in a helper thread.
 */

/** A request to the registry's REST API; the secrets it carries (authorization) never reach a message. */
export interface RegistryHttpRequest {
  /** Matches an answer to its request on the synchronous path. */
  seq?: number;
  method: 'GET' | 'POST' | 'PUT';
  url: string;
  body?: string;
  /** The Authorization header (`Basic ...`). */
  authorization?: string;
  /** PEM certificates to trust (https). */
  ca?: string;
  /** Whether to check the server's certificate (https); default true. */
  rejectUnauthorized?: boolean;
  timeoutMs: number;
}

export interface RegistryHttpAnswer {
  seq?: number;
  /** The HTTP status, or 0 when no answer came (`error` says why). */
  status: number;
  text: string;
  error?: string;
  errorCode?: string;
}

export function registryHttpCall(request: RegistryHttpRequest): Promise<RegistryHttpAnswer> {
  return new Promise((resolve) => {
    let url: URL;
    try {
      url = new URL(request.url);
    } catch (error) {
      resolve({ seq: request.seq, status: 0, text: '', error: (error as Error).message });
      return;
    }
    const secure = url.protocol === 'https:';
    const transport = process.getBuiltinModule(secure ? 'node:https' : 'node:http') as typeof import('node:https');
    const headers: Record<string, string> = { accept: 'application/vnd.schemaregistry.v1+json, application/json' };
    if (request.body !== undefined) {
      headers['content-type'] = 'application/vnd.schemaregistry.v1+json';
      headers['content-length'] = String(Buffer.byteLength(request.body));
    }
    if (request.authorization !== undefined) headers.authorization = request.authorization;
    const options: Record<string, unknown> = { method: request.method, headers, timeout: request.timeoutMs };
    if (secure && request.ca !== undefined) options.ca = request.ca;
    if (secure && request.rejectUnauthorized === false) options.rejectUnauthorized = false;
    const failed = (error: Error & { code?: string }) => resolve({ seq: request.seq, status: 0, text: '', error: error.message, errorCode: error.code });
    const call = transport.request(url, options, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ seq: request.seq, status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', failed);
    });
    call.on('timeout', () => call.destroy(Object.assign(new Error(`no answer within ${request.timeoutMs} ms`), { code: 'ETIMEDOUT' })));
    call.on('error', failed);
    call.end(request.body);
  });
}
