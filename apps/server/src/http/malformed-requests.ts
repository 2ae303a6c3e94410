import { maxHeaderSize, STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { DomainError, ErrorCode, HTTP_STATUS } from '../errors/domain-error';

/** The connection, with the response Node has in progress on it (its own field, which its rule reads). */
type ClientSocket = Duplex & { _httpMessage?: { headersSent: boolean } | null };

/** What Node's HTTP parser reports: its code (HPE_…), and its words for the fault. */
type ParserError = Error & { code?: string; reason?: string };

/**
 * A request Node cannot parse (a broken request line, a header too large, headers too slow) is
 * answered in the API's JSON error shape, where Node's own answer is a bare "400 Bad Request" in
 * plain text that says neither what nor where. As Node does, not on a connection whose response
 * has begun: that one is closed.
 */
export function answerMalformedRequests(server: Server): void {
  server.on('clientError', (err: ParserError, socket: ClientSocket) => {
    // Node's own rule: answer unless a response on this connection has begun, which the answer
    // would corrupt. (Counting bytes written instead left a keep-alive connection's second,
    // malformed request with no answer at all.)
    const inFlight = socket._httpMessage;
    if (!socket.writable || inFlight?.headersSent || err.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    const error = describe(err);
    const status = HTTP_STATUS[error.code];
    const body = JSON.stringify({ statusCode: status, error: error.code, message: error.message });
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    // The rest of what the client sends cannot be read as requests: it is not waited for.
    socket.once('finish', () => socket.destroy());
  });
}

function describe(err: ParserError): DomainError {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new DomainError(
        ErrorCode.HeadersTooLarge,
        `the request line and headers are larger than the server reads (${maxHeaderSize / 1024} KiB): send long values in the body`,
      );
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new DomainError(
        ErrorCode.RequestTimeout,
        'the request did not arrive whole within the server’s request timeout',
      );
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new DomainError(ErrorCode.PayloadTooLarge, 'chunk extensions too large');
    default:
      return new DomainError(
        ErrorCode.InvalidInput,
        `malformed HTTP request: ${err.reason ?? err.message}${err.code ? ` (${err.code})` : ''}`,
      );
  }
}
