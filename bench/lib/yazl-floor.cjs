// The floor of a bundle, run as its own node program like mcec-bundle: yazl writing the same images (stored)
// and tool-calls.jsonl (deflated, level 6) with fixed times, nothing else (no log read, no hashing, no page).
// usage: node yazl-floor.cjs <out.zip> <files.json: [{name, file, compress}]>
const fs = require('node:fs');
const yazl = require('yazl');

const [out, list] = process.argv.slice(2);
const files = JSON.parse(fs.readFileSync(list, 'utf8'));
const zip = new yazl.ZipFile();
const mtime = new Date(Date.UTC(2026, 11, 2));
for (const f of files) {
  const options = f.compress ? { mtime, compress: true, compressionLevel: 6 } : { mtime, compress: false };
  zip.addReadStreamLazy(f.name, options, (cb) =>
    cb(null, fs.createReadStream(f.file, { highWaterMark: 1 << 20 })),
  );
}
zip.end();
const sink = fs.createWriteStream(out, { highWaterMark: 1 << 20 });
zip.outputStream.pipe(sink);
sink.on('close', () => process.exit(0));
sink.on('error', (err) => {
  process.stderr.write(`${err.message}\n`);
  process.exit(1);
});
