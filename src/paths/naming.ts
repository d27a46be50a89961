/**
 * How the project names what it writes: session dirs, artifact files, the log file, and the relative paths it
 * accepts from a log. A leaf (no project imports): store, artifacts, sim, report and bundle all name things here.
 */
/** Session ids used in paths must match this (mcec-wire §5 ids are 12 hex; runners may pick their own). */
export const SAFE_SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Name of the log file inside a session dir. */
export const LOG_FILE = 'session.sqlite';
/** Name of the artifact folder inside a session dir. */
export const ARTIFACTS_DIR = 'artifacts';
/** The folder beside `artifacts/` where thumbnails of its images are kept, by the sha256 of each image. */
export const THUMBNAILS_DIR = 'thumbnails';

/** `thumbnails/<sha256>-<width>.webp`: a kept thumbnail, relative to the session dir. */
export function thumbnailRelativePath(sha256: string, width: number): string {
  return `${THUMBNAILS_DIR}/${sha256}-${width}.webp`;
}

/** True when `id` may appear in a path as is. */
export function isSafeSessionId(id: unknown): id is string {
  return typeof id === 'string' && SAFE_SESSION_ID.test(id);
}

function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** `yyyyMMdd-HHmmss` in UTC (never local time: names must not depend on TZ). */
export function utcStamp(date: Date): string {
  return (
    `${date.getUTCFullYear()}${pad(date.getUTCMonth() + 1)}${pad(date.getUTCDate())}-` +
    `${pad(date.getUTCHours())}${pad(date.getUTCMinutes())}${pad(date.getUTCSeconds())}`
  );
}

/** `yyyyMMdd-HHmmssfff` in UTC, for artifact names. */
export function utcStampMillis(date: Date): string {
  return `${utcStamp(date)}${pad(date.getUTCMilliseconds(), 3)}`;
}

/** The session directory's name: `<yyyyMMdd-HHmmss UTC>-<sessionId>`. */
export function sessionDirName(startedAt: Date, sessionId: string): string {
  if (!isSafeSessionId(sessionId))
    throw new Error(`session id is not path-safe: ${JSON.stringify(sessionId)}`);
  return `${utcStamp(startedAt)}-${sessionId}`;
}

/** Split a session dir name into its stamp and id, or null when it is not one. */
export function parseSessionDirName(name: string): { stamp: string; sessionId: string } | null {
  const m = /^(\d{8}-\d{6})-([A-Za-z0-9_-]{1,64})$/.exec(name);
  return m ? { stamp: m[1]!, sessionId: m[2]! } : null;
}

/** A session dir as copies are told apart: its name, and its log's session id and start (ISO, null unknown). */
export interface SessionDirIdentity {
  dirName: string;
  sessionId: string;
  startedAt: string | null;
}

/** A session more than one dir holds: the dir it is counted from first, then its copies. */
export interface SessionCopies {
  sessionId: string;
  dirNames: string[];
}

/**
 * True when a dir is named as the recorder names its log's session, `<UTC stamp of its start>-<id>`: the
 * session's own dir, not a copy (`... (2)`, `... - Copy`), a renamed dir or one named by hand. A log whose
 * start is unknown (unreadable) is judged by its name alone. The catalog's `ODD_NAME` (src/store/catalog.ts)
 * is the negation of this in SQL, for its partial index.
 */
export function isOwnSessionDir(s: SessionDirIdentity): boolean {
  const started = s.startedAt === null ? Number.NaN : Date.parse(s.startedAt);
  if (!Number.isFinite(started)) return parseSessionDirName(s.dirName)?.sessionId === s.sessionId;
  return s.dirName === `${utcStamp(new Date(started))}-${s.sessionId}`;
}

/** Dirs of one run (copies: the same log id and start) share this key; a dir whose start is unknown is alone. */
export function runKey(s: SessionDirIdentity): string {
  return `${s.sessionId}\n${s.startedAt ?? `\n${s.dirName}`}`;
}

/**
 * One item per session, the rule for every count across sessions (triage, the JUnit report, the OTLP export):
 * dirs whose logs have the same id and start are copies of one run. The one kept is the session's own dir
 * (`isOwnSessionDir`) when there is one, else the first; `copies` names each such session's dirs, the kept one
 * first. Items keep their order; one whose start is unknown is never another's copy.
 */
export function oneDirPerSession<T>(
  items: readonly T[],
  identityOf: (item: T) => SessionDirIdentity,
): { kept: T[]; copies: SessionCopies[] } {
  const byRun = new Map<string, Array<{ item: T; id: SessionDirIdentity }>>();
  for (const item of items) {
    const id = identityOf(item);
    const key = runKey(id);
    const same = byRun.get(key);
    if (same) same.push({ item, id });
    else byRun.set(key, [{ item, id }]);
  }
  const copies: SessionCopies[] = [];
  const kept = new Set<T>();
  for (const same of byRun.values()) {
    const own = same.find((s) => isOwnSessionDir(s.id)) ?? same[0]!;
    kept.add(own.item);
    if (same.length > 1)
      copies.push({
        sessionId: own.id.sessionId,
        dirNames: [own, ...same.filter((s) => s !== own)].map((s) => s.id.dirName),
      });
  }
  return { kept: items.filter((item) => kept.has(item)), copies };
}

/** The line every output says a session's copies with: counted once from the first dir named, the others left out. */
export function copiesLine(c: SessionCopies): string {
  return (
    `session ${c.sessionId} is in ${c.dirNames.length} dirs (copies of one run), counted once from ` +
    `${JSON.stringify(c.dirNames[0])}; left out: ${c.dirNames
      .slice(1)
      .map((d) => JSON.stringify(d))
      .join(', ')}`
  );
}

/**
 * True for a dir name that travels as a zip's top folder and unzips as is on Windows, macOS and Linux: a
 * session dir's own name (`<stamp>-<id>`) or a copy's (`... (2)`, `... - Copy`, `... copy`). Letters and digits
 * of any script, space and `_-.()[]+,=@~`; up to 128 characters, not starting with a space or a dot, and a
 * name Windows keeps as it is (`windowsNameProblem`: no trailing dot or space, no device name such as `COM¹`).
 */
export function isPortableDirName(name: string): boolean {
  return (
    /^[\p{L}\p{N}_([][\p{L}\p{N}\p{M} _.()[\]+,=@~-]{0,127}$/u.test(name) && windowsNameProblem(name) === null
  );
}

/**
 * The names Windows maps to a device in every folder (Microsoft's "Naming Files, Paths, and Namespaces";
 * CreateFile's consoles), any case, also before an extension, spaces before the dot ignored (`nul.png`,
 * `CON .txt`); ntdll counts the Latin-1 superscripts ¹²³ as digits, so `COM¹` is a port.
 */
export const WINDOWS_DEVICE_NAME = /^(?:con|prn|aux|nul|conin\$|conout\$|com[0-9¹²³]|lpt[0-9¹²³]) *(?:\.|$)/i;

/** Characters no Windows file name may hold: `<>:"/\|?*` and the controls U+0000-U+001F. */
const WINDOWS_RESERVED_CHAR = /[<>:"/\\|?*\u0000-\u001f]/;

/** The longest name (one segment, in UTF-16 units) NTFS, exFAT and FAT hold. */
const MAX_WINDOWS_NAME = 255;

/**
 * Why `segment` (one file or folder name, no separators) would not be that name on Windows, or null. A colon
 * names an alternate data stream of another file (`report.html:x`); a device name opens the device;
 * Win32 drops trailing dots and spaces (`a.png.` is `a.png`); a name shaped like an 8.3 short name
 * (`CAPTUR~1.PNG`) can be another file's short name; the other reserved characters, and names over 255
 * units, fail. The rule every name from foreign input (a zip entry, a log's artifact path) is held to
 * before it becomes a path, on every platform, so what passes on Linux is safe on Windows.
 */
export function windowsNameProblem(segment: string): string | null {
  const bad = WINDOWS_RESERVED_CHAR.exec(segment)?.[0];
  if (bad !== undefined) {
    if (bad === ':') return 'holds a ":" (on Windows it names an alternate data stream of another file)';
    const code = bad.charCodeAt(0);
    return code < 0x20
      ? `holds a control character (U+${code.toString(16).toUpperCase().padStart(4, '0')})`
      : `holds a ${JSON.stringify(bad)} (not allowed in a Windows file name)`;
  }
  if (/[ .]$/.test(segment)) return "ends with a dot or a space (Windows drops it: another file's name)";
  if (WINDOWS_DEVICE_NAME.test(segment))
    return 'is a Windows device name (CON, PRN, AUX, NUL, CONIN$, CONOUT$, COM0-9, LPT0-9, ¹²³ too; any extension)';
  if (looksLikeShortName(segment))
    return "is shaped like a Windows 8.3 short name (NAME~N.EXT), which can be another file's";
  if (segment.length > MAX_WINDOWS_NAME) return `is longer than ${MAX_WINDOWS_NAME} characters`;
  return null;
}

/** `NAME~N.EXT`: at most 8 characters ending `~<digits>` before the first dot, at most 3 after it. */
function looksLikeShortName(segment: string): boolean {
  const dot = segment.indexOf('.');
  const base = dot < 0 ? segment : segment.slice(0, dot);
  const ext = dot < 0 ? '' : segment.slice(dot + 1);
  return base.length <= 8 && /~[0-9]+$/.test(base) && ext.length <= 3 && !ext.includes('.');
}

/**
 * A key two names share when Windows (NTFS) or macOS (APFS, HFS+) would take them as one file: letter case
 * and Unicode normalization (NFC/NFD) folded. Folding both ways also joins a few names those keep apart
 * (`ß` and `ss`, the Kelvin sign and `k`): refused as twins too, which costs nothing real.
 */
export function sameFileKey(name: string): string {
  return name.normalize('NFC').toLowerCase().toUpperCase().normalize('NFC');
}

/** An artifact's file name: `<prefix>-<UTC yyyyMMdd-HHmmssfff>-<n>.<extension>` (`capture`, `recording`). */
export function artifactFileName(prefix: string, at: Date, n: number, extension: string): string {
  return `${prefix}-${utcStampMillis(at)}-${n}.${extension}`;
}

/** A relative path that stays inside the session dir, with `/` separators; null otherwise. */
export function safeRelativePath(value: unknown): string | null {
  if (typeof value !== 'string' || value.length === 0 || value.length > 500) return null;
  const p = value.replaceAll('\\', '/');
  if (p.startsWith('/') || /^[A-Za-z]:/.test(p) || p.includes('\0')) return null;
  const parts = p.split('/');
  if (parts.some((s) => s === '..' || s === '')) return null;
  const kept = parts.filter((s) => s !== '.');
  // A name Windows reads as another (a device, a stream, a trailing dot) is not a file of the session.
  if (kept.some((s) => windowsNameProblem(s) !== null)) return null;
  return kept.join('/');
}
