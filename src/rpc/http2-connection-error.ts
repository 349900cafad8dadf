/** A connection error (RFC 9113 §5.4.1): the connection ends with GOAWAY carrying `code` (an HTTP/2 error code) and the message as debug data. */
export class Http2ConnectionError extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}
