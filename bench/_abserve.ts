// Run from a checkout's root: npx tsx bench/_abserve.ts ; prints one JSON line {url,key,ids,pid} then keeps running.
import { createServiceContext, systemClock } from '../src/services/context.js';
import { generateKey } from '../src/services/generateKey.js';
import { seedContracts } from '../src/services/seedContracts.js';
import { setShopPlan } from '../src/services/shops.js';
import { benchDatabase, buildServer, startChild } from './support.js';
const bench = await benchDatabase();
const ctx = createServiceContext({ db: bench.db, clock: systemClock, freeUntil: null });
const shop = await setShopPlan({ ctx, input: { domain: 'bench.myshopify.com', plan: 'enterprise' } });
const { secret } = await generateKey({ ctx, input: { shopId: shop.id, name: 'bench' } });
const seeded = await seedContracts({ ctx, input: { shopId: shop.id, count: 2000 } });
await bench.db.close();
const env = { HOST: '127.0.0.1', LOG_LEVEL: 'info', RATE_LIMIT_PER_MINUTE: '100000000', AUTH_FAILURE_LIMIT_PER_MINUTE: '100000000', ...bench.env, ...(process.env.AB_ENV ? JSON.parse(process.env.AB_ENV) : {}) };
const svc = await startChild('dist/main.js', env, buildServer(process.env.AB_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.AB_PROFILE}`] : []));
console.log(JSON.stringify({ url: svc.url, key: secret, ids: seeded.map((c: any) => c.id), pid: svc.child.pid }));
const stop = async () => { svc.child.kill('SIGTERM'); await new Promise((r) => setTimeout(r, 1500)); await bench.cleanup(); process.exit(0); };
process.on('SIGTERM', stop); process.on('SIGINT', stop);
setInterval(() => {}, 1 << 30);
