import Fastify from 'fastify';

/** The baseline: a bare Fastify echo server, measured in the same run as svc so ratios cancel out the machine. */
const app = Fastify({ logger: false });
app.get('/echo/:id', async (req) => ({ id: (req.params as { id: string }).id, ok: true }));
app.post('/echo/:id', async (req) => ({ id: (req.params as { id: string }).id, body: req.body }));
void app.listen({ port: Number(process.env.PORT ?? 0), host: '127.0.0.1' }).then((address) => {
  process.stdout.write(`listening ${address}\n`);
});
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
