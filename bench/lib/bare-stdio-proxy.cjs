// The floor of the stdio proxy's CPU figure: a bare Node pass-through in front of the same child. The
// client's bytes are piped to the child's stdin and the child's stdout back, as mcec-record stdio forwards
// them: no line splitting, no parsing, no recording. Usage: node bare-stdio-proxy.cjs -- <command> [args].
const { spawn } = require('node:child_process');

const command = process.argv.slice(process.argv.indexOf('--') + 1);
const child = spawn(command[0], command.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
process.stdin.pipe(child.stdin);
child.stdout.pipe(process.stdout);
child.stdin.on('error', () => {});
child.on('exit', (code) => process.exit(code ?? 0));
process.on('SIGTERM', () => child.kill('SIGTERM'));
