import { crc32, deflateSync } from 'node:zlib';
import type { FastifyInstance } from 'fastify';

/**
 * The site icon. Browsers ask for /favicon.ico by themselves on any page that names no icon (the JSON of the API
 * and the docs opened in a tab, say), and a 404 there is a console error on every load. The admin page names its
 * own SVG (web/public/favicon.svg); this is the same mark — a green rounded square with a white check, on a 32×32
 * grid — drawn here into a PNG inside an ICO, so no binary file has to be kept in the repository.
 */

const SIZE = 32;
const GREEN = [0x30, 0xc4, 0x8d];
const RADIUS = 7;
/** The check mark's polyline and stroke width, as in favicon.svg (M9 16.5 l4.5 4.5 9.5-10, width 3.2). */
const CHECK: [number, number][] = [
  [9, 16.5],
  [13.5, 21],
  [23, 11],
];
const STROKE = 3.2;

function insideRoundedSquare(x: number, y: number): boolean {
  const cx = Math.min(Math.max(x, RADIUS), SIZE - RADIUS);
  const cy = Math.min(Math.max(y, RADIUS), SIZE - RADIUS);
  return (x - cx) ** 2 + (y - cy) ** 2 <= RADIUS ** 2;
}

function distanceToSegment(x: number, y: number, [ax, ay]: [number, number], [bx, by]: [number, number]): number {
  const dx = bx - ax;
  const dy = by - ay;
  const t = Math.max(0, Math.min(1, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy)));
  return Math.hypot(x - (ax + t * dx), y - (ay + t * dy));
}

const onCheck = (x: number, y: number) =>
  CHECK.slice(1).some((b, i) => distanceToSegment(x, y, CHECK[i], b) <= STROKE / 2);

/** RGBA rows, each prefixed with PNG filter byte 0; 4×4 samples per pixel smooth the edges. */
function pixels(): Buffer {
  const out = Buffer.alloc(SIZE * (SIZE * 4 + 1));
  const n = 4;
  for (let py = 0; py < SIZE; py++) {
    const row = py * (SIZE * 4 + 1);
    for (let px = 0; px < SIZE; px++) {
      let covered = 0;
      let white = 0;
      for (let sy = 0; sy < n; sy++) {
        for (let sx = 0; sx < n; sx++) {
          const x = px + (sx + 0.5) / n;
          const y = py + (sy + 0.5) / n;
          if (!insideRoundedSquare(x, y)) continue;
          covered++;
          if (onCheck(x, y)) white++;
        }
      }
      const i = row + 1 + px * 4;
      const w = covered ? white / covered : 0;
      for (let c = 0; c < 3; c++) out[i + c] = Math.round(GREEN[c] + (255 - GREEN[c]) * w);
      out[i + 3] = Math.round((255 * covered) / (n * n));
    }
  }
  return out;
}

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'ascii');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0);
  return Buffer.concat([head, data, crc]);
}

function png(): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(SIZE, 0);
  ihdr.writeUInt32BE(SIZE, 4);
  ihdr.set([8, 6, 0, 0, 0], 8); // 8 bits per channel, RGBA, deflate, no filter method, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(pixels())),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** An ICO holding one 32×32 PNG image (every current browser reads PNG inside ICO). */
export function faviconIco(): Buffer {
  const image = png();
  const header = Buffer.alloc(6 + 16);
  header.writeUInt16LE(0, 0); // reserved
  header.writeUInt16LE(1, 2); // type: icon
  header.writeUInt16LE(1, 4); // one image
  header.writeUInt8(SIZE, 6);
  header.writeUInt8(SIZE, 7);
  header.writeUInt8(0, 8); // no palette
  header.writeUInt8(0, 9);
  header.writeUInt16LE(1, 10); // colour planes
  header.writeUInt16LE(32, 12); // bits per pixel
  header.writeUInt32LE(image.length, 14);
  header.writeUInt32LE(header.length, 18);
  return Buffer.concat([header, image]);
}

/** GET /favicon.ico, drawn once per process. */
export function faviconRoute(app: FastifyInstance): void {
  let ico: Buffer | null = null;
  app.get('/favicon.ico', { schema: { hide: true } }, async (_req, reply) => {
    ico ??= faviconIco();
    return reply.type('image/x-icon').header('cache-control', 'public, max-age=86400').send(ico);
  });
}
