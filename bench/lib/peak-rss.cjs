// Preloaded (node --require) into a measured program when GNU time is missing: at exit, write the process's
// peak resident set (VmHWM from /proc/self/status, in bytes) to $MCEC_BENCH_PEAK_FILE.
const fs = require('node:fs');

process.on('exit', () => {
  const file = process.env.MCEC_BENCH_PEAK_FILE;
  if (!file) return;
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    if (m) fs.writeFileSync(file, String(Number(m[1]) * 1024));
  } catch {
    // no /proc here: the figure is reported as not measured
  }
});
