/**
 * A Gatehouse webhook receiver: verify the sender, acknowledge with 2xx at once, drop
 * duplicates by event ID, then do the slow work. Run it:
 *
 *   WEBHOOK_SECRET=whsec_... PORT=9000 node examples/webhook-receiver/receiver.js
 *
 * (after `npm run build`; in your own project import from 'gatehouse/webhooks').
 */
import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';
import {
  createDeduper,
  verifyWebhook,
  WebhookVerificationError,
} from '../../dist/adapters/webhooks/index.js';

/**
 * Creates the request handler. `handle(event)` does the slow work, after the response is sent.
 * @param {{ secret: string | string[], handle: (event: any) => Promise<void>, deduper?: any }} options
 */
export function createReceiver({ secret, handle, deduper = createDeduper() }) {
  return (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks);
      let event;
      try {
        event = verifyWebhook(secret, req.headers, body);
      } catch (error) {
        // Not from Gatehouse (or too old): refuse, and do nothing.
        res.writeHead(error instanceof WebhookVerificationError ? 401 : 400).end();
        return;
      }
      let fresh;
      try {
        fresh = await deduper.claim(event.id);
      } catch {
        res.writeHead(503).end(); // could not record it: let Gatehouse retry
        return;
      }
      res.writeHead(204).end(); // acknowledge first: slow work must not hold the sender
      if (!fresh) return; // a retry of an event already handled
      try {
        await handle(event);
      } catch {
        await deduper.release(event.id); // a redelivery will be processed again
      }
    });
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const secret = process.env.WEBHOOK_SECRET;
  if (!secret) {
    console.error(
      'Set WEBHOOK_SECRET to the whsec_… secret Gatehouse returned when you registered the webhook.',
    );
    process.exit(1);
  }
  const port = Number(process.env.PORT ?? 9000);
  const server = createServer(
    createReceiver({
      secret,
      handle: async (event) => {
        if (event.type === 'gate_evaluation' && event.data.verdict === 'Block') {
          console.log(
            `BLOCKED ${event.data.action} in ${event.session_id}: ${event.data.reason} (${event.data.decision_id})`,
          );
        } else {
          console.log(`${event.type} ${event.id}`);
        }
      },
    }),
  );
  server.listen(port, '127.0.0.1', () => console.log(`receiver listening on http://127.0.0.1:${port}/`));
}
