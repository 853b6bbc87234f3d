import pino, { type Logger } from 'pino';

/** JSON logs on stdout. Secrets never reach them: authorization headers, cookies and passwords are redacted. */
export function createLogger(level: string): Logger {
  return pino({
    level,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]', 'password', '*.password', 'token', '*.token'],
      censor: '[redacted]',
    },
  });
}
