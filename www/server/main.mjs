#!/usr/bin/env node
// toolgate reference endpoint: `node www/server/main.mjs`.
// Configuration comes from the environment (see README.md).
import { startServer, configFromEnv } from './server.mjs';

export { startServer, configFromEnv };

const config = configFromEnv(process.env);
let srv;
try {
  srv = await startServer(config);
} catch (e) {
  process.stderr.write(`toolgate endpoint failed to start: ${e.message}\n`);
  process.exit(1);
}
process.stdout.write(`toolgate endpoint listening on ${srv.url}\n`);
if (srv.faults) process.stderr.write(`fault injection on: ${JSON.stringify(srv.faults.cfg)}\n`);

let closing = false;
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, async () => {
    if (closing) process.exit(1);
    closing = true;
    await srv.close();
    process.exit(0);
  });
}
