/** The tools/list entries, copied from the server (ToolCatalog.cs schemas, JsonRpcDispatcher.BuildToolsList), in its order. */

/** One property of an input schema. */
export interface PropSchema {
  type: 'string' | 'integer' | 'boolean' | 'object' | 'number' | 'array';
  description: string;
  properties?: Record<string, PropSchema | { type: string; description: string }>;
  items?: { type: string; properties?: Record<string, { type: string; description: string }> };
}

/** A tools/list entry. */
export interface ToolListing {
  name: string;
  description: string;
  inputSchema: { type: 'object'; properties: Record<string, PropSchema>; required: string[] };
}

const prop = (type: PropSchema['type'], description: string): PropSchema => ({ type, description });

/** The routing argument the server injects into the catalog tools, send_command and request-command-access. */
export const SESSION_ARG = prop(
  'string',
  'Optional session id (from session-start) to run this call in; omit to use the default session (#86).',
);

function windowTargetProps(): Record<string, PropSchema> {
  return {
    window: prop('string', 'Window title substring (case-insensitive) to target'),
    handle: prop('integer', 'Explicit window handle (HWND) to target'),
    process: prop('string', 'Process name (without .exe) to target'),
    className: prop('string', 'Window class name to target'),
    foreground: prop('boolean', 'Target the current foreground window'),
  };
}

function endpoint(description: string): PropSchema {
  return {
    type: 'object',
    description,
    properties: {
      by: prop('string', 'Match by: name | automationid | classname (default name)'),
      value: prop('string', 'Element value to match (omit for a pixel endpoint)'),
      x: prop('integer', 'Endpoint X in absolute screen pixels (omit for an element endpoint)'),
      y: prop('integer', 'Endpoint Y in absolute screen pixels (omit for an element endpoint)'),
    },
  };
}

function tool(
  name: string,
  description: string,
  properties: Record<string, PropSchema>,
  required: string[],
  routed: boolean,
): ToolListing {
  const props = routed ? { ...properties, sessionId: SESSION_ARG } : properties;
  return { name, description, inputSchema: { type: 'object', properties: props, required } };
}

const REGION_WIDTH =
  'Region width (max 16384/side, 64000000 px total; oversized fails with region-too-large)';

/** Every tool the server lists, in its order: the catalog, then the meta-tools. */
export const TOOL_LISTINGS: readonly ToolListing[] = [
  tool(
    'capture',
    'Screenshot a window (PrintWindow PW_RENDERFULLCONTENT, captures WinUI/WPF surfaces) or a screen region; returns PNG. Blank/black frames are detected and reported as a capture-blank error (window) or warning (region) rather than a silent bad image.',
    {
      ...windowTargetProps(),
      x: prop('integer', 'Region left (use with width/height instead of a window)'),
      y: prop('integer', 'Region top'),
      width: prop('integer', REGION_WIDTH),
      height: prop('integer', 'Region height (same limits as width)'),
      maxWidth: prop('integer', 'Optionally downscale output so width fits this (no upscaling)'),
      scale: prop('number', 'Optionally downscale output by this factor (0 < scale <= 1; no upscaling)'),
      returnImage: prop(
        'boolean',
        'When false, omit inline base64 from the result and do not emit an MCP image content block',
      ),
      pathOnly: prop(
        'boolean',
        'Alias for returnImage:false; write the PNG to the session artifact directory and return metadata + path only',
      ),
      file: prop('string', 'Optional path to also save the PNG to'),
    },
    [],
    true,
  ),
  tool(
    'get-text',
    'Read visible text from a window or screen region via Windows OCR; returns text plus line/word counts (cheaper than capture for web field verification). Blank regions fail with ocr-blank; unreadable text fails with ocr-no-text.',
    {
      ...windowTargetProps(),
      x: prop(
        'integer',
        'Region left: screen-absolute when no window target, window-relative when a window is targeted',
      ),
      y: prop('integer', 'Region top (same coordinate space as x)'),
      width: prop('integer', REGION_WIDTH),
      height: prop('integer', 'Region height (same limits as width)'),
    },
    [],
    true,
  ),
  tool(
    'query',
    'Dump the UI Automation tree of a window: control type, name, automation id, bounds, state. Returns nodeCount/truncated and warns when the node cap clips the tree.',
    {
      ...windowTargetProps(),
      maxDepth: prop('integer', 'Max UI Automation tree depth (default 6)'),
      maxNodes: prop(
        'integer',
        'Max UI Automation nodes returned (default 1000); a clipped tree is flagged with a tree-truncated warning',
      ),
    },
    [],
    true,
  ),
  tool(
    'displays',
    "Report display geometry: every monitor's pixel bounds, working area, primary flag, and DPI/scale, plus the union virtualBounds. Use it to interpret the absolute-pixel bounds query/find return and to place pixel clicks/drags; no arguments.",
    {},
    [],
    true,
  ),
  tool(
    'windows',
    "Discover top-level windows and WAIT on window state. Returns each window's handle, title, className, processName, processId, and bounds so you can target a window instead of guessing; reuse a returned handle directly on query/capture/invoke. Optionally filter by title substring / process / class. With a timeout it WAITS for `condition`: appears (default; poll until a match exists, count:0 on timeout), disappears (poll until no window matches, e.g. a dialog closed), or foreground (poll until a matching window is the foreground window). No filter lists every window; a wait, or disappears/foreground, with no filter is refused. On a timeout the result carries waitedFor + lastObservedWindows for triage.",
    {
      window: prop('string', 'Filter by window title substring (case-insensitive)'),
      process: prop('string', 'Filter by process name (without .exe)'),
      className: prop('string', 'Filter by window class name (exact)'),
      condition: prop(
        'string',
        'The predicate to evaluate, waited for with a timeout or checked once with timeout:0: appears (default; a matching window exists), disappears (no window matches any more, e.g. a modal closed), or foreground (a matching window is the foreground window). Returns satisfied for the predicate result',
      ),
      timeout: prop(
        'integer',
        'Milliseconds to WAIT for the condition (0 = check/list now, one-shot); a wait, and the disappears/foreground conditions, require at least one filter',
      ),
    },
    [],
    true,
  ),
  tool(
    'window',
    'Manage a top-level window by handle/title/process/class: move, resize, minimize, maximize, restore, or foreground it. For move/resize, animate:true makes the window appear to be dragged by its title bar/sizing border.',
    {
      ...windowTargetProps(),
      action: prop(
        'string',
        'Action to perform: move | resize | minimize | maximize | restore | foreground (default foreground)',
      ),
      x: prop('integer', 'Target X for move (top-left of the window)'),
      y: prop('integer', 'Target Y for move (top-left of the window)'),
      width: prop('integer', 'Target width for resize'),
      height: prop('integer', 'Target height for resize'),
      animate: prop(
        'boolean',
        'For move/resize, animate the change as a short drag gesture instead of an instant jump',
      ),
    },
    [],
    true,
  ),
  tool(
    'find',
    'Find (or wait for, with a timeout) a UI Automation element by name / automation id / class.',
    {
      ...windowTargetProps(),
      by: prop('string', 'Match by: name | automationid | classname (default name)'),
      value: prop('string', 'Value to match'),
      timeout: prop('integer', 'Milliseconds to wait for the element (0 = no wait)'),
    },
    ['value'],
    true,
  ),
  tool(
    'wait-for',
    'Wait for a UI Automation element to appear: polls until found or the timeout elapses (default 5s).',
    {
      ...windowTargetProps(),
      by: prop('string', 'Match by: name | automationid | classname (default name)'),
      value: prop('string', 'Value to match'),
      timeout: prop('integer', 'Milliseconds to wait for the element (default 5000)'),
    },
    ['value'],
    true,
  ),
  tool(
    'invoke',
    "Drive a UI Automation element (Invoke/Toggle/Value/SetFocus/Expand/Collapse/Select); more reliable than coordinate clicks. Use 'select' for tabs, list items, radios (SelectionItem pattern).",
    {
      ...windowTargetProps(),
      by: prop('string', 'Match by: name | automationid | classname (default name)'),
      value: prop('string', 'Value to match'),
      action: prop(
        'string',
        'invoke | toggle | setvalue | setfocus | expand | collapse | select (default invoke). Use expand to open a menu before invoking its items; use select for TabItem, ListItem, RadioButton etc.',
      ),
      text: prop('string', 'Text for the setvalue action'),
    },
    ['value'],
    true,
  ),
  tool(
    'drag',
    'Press → move along a path → release, dispatched atomically (no interleaving). Endpoints are an element (by/value, dragged from/to its centre) or a pixel: with a window target, pixel endpoints are window-relative (matching capture coordinates); without one, they are absolute screen pixels. Add path waypoints (always absolute pixels) for a curved/multi-stop drag. Covers window resize/move by chrome, sliders, marquee select, drag-reorder. Give a window target when either endpoint is an element.',
    {
      ...windowTargetProps(),
      from: endpoint(
        'Drag start: an element ({ by, value }) in the target window, or a pixel ({ x, y }). With a window target and a pixel endpoint, x/y are window-relative (window top-left + offset); without a window target they are absolute screen pixels.',
      ),
      to: endpoint(
        'Drag end: an element ({ by, value }) in the target window, or a pixel ({ x, y }). With a window target and a pixel endpoint, x/y are window-relative (window top-left + offset); without a window target they are absolute screen pixels.',
      ),
      path: {
        type: 'array',
        description: 'Optional intermediate waypoints (absolute screen pixels) between from and to.',
        items: {
          type: 'object',
          properties: {
            x: prop('integer', 'Waypoint X (screen pixels)'),
            y: prop('integer', 'Waypoint Y (screen pixels)'),
          },
        },
      },
    },
    ['from', 'to'],
    true,
  ),
  tool(
    'click',
    "Click at a point; an element (by/value, clicked at its centre) or a pixel endpoint. With a window target, pixel endpoints are window-relative (window top-left + offset, matching capture coordinates); without one they are absolute screen pixels (the space query/find bounds report). Move+click is dispatched atomically. Prefer invoke for buttons/menus; use click for element types invoke cannot drive or when you must target a pixel. Give a window target when 'at' is an element or when you want window-relative pixels.",
    {
      ...windowTargetProps(),
      at: endpoint(
        'Where to click: an element ({ by, value }) in the target window (its centre) or a pixel ({ x, y }). With a window target and a pixel endpoint, x/y are window-relative (window top-left + offset); without a window target they are absolute screen pixels.',
      ),
      button: prop('string', 'Button: left | right | middle (default left)'),
      count: prop('integer', 'Click count: 1 = single, 2 = double (default 1)'),
    },
    ['at'],
    true,
  ),
  tool(
    'focus',
    "Give a window (and optionally a control in it) real keyboard focus so send_command/chars keystrokes reach it. Foregrounds the window, clicks the control (a real click focuses surfaces a bare UIA setfocus misses; e.g. a MAUI GraphicsView), then verifies. Fails with category 'foreground' if the window won't activate, 'focus' if no control took focus. Use before sending app keyboard shortcuts to a custom-drawn surface.",
    {
      ...windowTargetProps(),
      at: endpoint(
        'Optional control to focus: an element ({ by, value }) in the target window (clicked at its centre) or an absolute screen pixel ({ x, y }). Omit to just bring the window to the foreground and confirm keyboard focus is in it.',
      ),
    },
    [],
    true,
  ),
  tool(
    'clipboard',
    'Read or write the system text clipboard. Use set before pasting a path into a system file dialog filename field (Ctrl+V).',
    {
      action: prop('string', 'set | get'),
      text: prop('string', 'Text to set (required for action=set)'),
    },
    ['action'],
    true,
  ),
  tool(
    'record',
    'Record a window or region to an animated GIF over time (start/stop or a bounded one-shot). Use only to show CHANGE over time; for a single state check use capture.',
    {
      ...windowTargetProps(),
      x: prop('integer', 'Region left (use with width/height instead of a window)'),
      y: prop('integer', 'Region top'),
      width: prop('integer', REGION_WIDTH),
      height: prop('integer', 'Region height (same limits as width)'),
      action: prop('string', 'start | stop | oneshot (default: oneshot if durationMs given, else start)'),
      fps: prop('integer', 'Frames per second (default 5, clamped to the operator limit)'),
      durationMs: prop('integer', 'For a one-shot: how long to record (clamped to the operator limit)'),
      maxWidth: prop('integer', 'Downscale frames so width fits this (default 1280)'),
      file: prop('string', 'Output .gif path (a temp path is generated if omitted)'),
    },
    [],
    true,
  ),
  tool(
    'launch',
    'Launch an application directly as a gated agent action. Returns process/window info plus explicit launch intent flags: startedNewProcess and attachedToExisting (with launchedProcessId/windowProcessId when attachment is detected). Preferred over send_command winr dance for reliability.',
    {
      path: prop(
        'string',
        'Path to executable, shell: protocol target (e.g. shell:AppsFolder\\...), or .lnk (required)',
      ),
      arguments: prop('string', 'Command line arguments to pass to the process'),
      workingDirectory: prop('string', 'Initial working directory for the launched process'),
      timeout: prop('integer', 'Milliseconds to wait for the app window to appear (default 5000)'),
    },
    ['path'],
    true,
  ),
  tool(
    'send_command',
    'Send any raw MCEC command string to the existing command core (e.g. actuation commands).',
    { command: prop('string', 'The MCEC command string to enqueue') },
    ['command'],
    true,
  ),
  tool(
    'session-start',
    "Start a new agent session and get its sessionId. Echo that sessionId on later tool calls to run them in this session (its own active target, last observation/action/error, and artifact directory); omit sessionId on a call to use the default session. Returns the new session's status. Use this to run independent multi-step tasks that must not share state.",
    {},
    [],
    false,
  ),
  tool(
    'session-status',
    "Report a session's state: active target window, last observation, last action, last error, artifact directory, and any emergency stop. Pass 'sessionId' to inspect a specific session (from session-start), or omit it for the default session.",
    {
      sessionId: prop('string', 'The session to inspect (from session-start); omit for the default session'),
    },
    [],
    false,
  ),
  tool(
    'session-end',
    'End an agent session started with session-start, freeing its server-side state. Idempotent: ending an unknown/already-ended id reports ended:false rather than erroring. After this, a tool call echoing that sessionId is refused with unknown-session.',
    { sessionId: prop('string', 'The session to end (from session-start)') },
    ['sessionId'],
    false,
  ),
  tool(
    'request-command-access',
    'Ask the OPERATOR to enable disabled MCEC command(s) in this instance; the recovery for error.code:command-disabled. Shows a consent dialog on their screen and BLOCKS until they answer (up to ~2 minutes): allow exactly these commands, allow these plus any future requests, or deny. On a grant the commands are immediately usable (enabled in-memory, this instance only; nothing is written to config files; never edit them yourself). A deny is FINAL for this instance: re-requesting a denied command returns consent-denied without a prompt, so ask once, honestly. No answer within the timeout returns consent-timeout (the operator may be away; you may ask again later). While the dialog is up only observation tools are served; anything else returns consent-pending. Keep the reason to one short, specific sentence; the operator reads it verbatim.',
    {
      commands: {
        type: 'array',
        description:
          "The command name(s) to enable (max 8); the names command-disabled refusals report (e.g. 'launch', 'chars:')",
        items: { type: 'string' },
      },
      reason: prop(
        'string',
        'One short sentence saying why you need these commands; shown to the operator verbatim',
      ),
    },
    ['commands', 'reason'],
    true,
  ),
  tool(
    'provision-session',
    "Get a fresh, disposable, isolated MCEC instance to run from instead of enabling the installed one. Returns a directory containing mcec.exe + an agent-ready co-located config (agent commands enabled ONLY inside the copy), plus how to launch/connect and the sessionId + token to tear it down. The token is the session credential: HTTP requests to the session's mcpEndpoint must send 'Authorization: Bearer <token>', and end-session requires it. Requires the operator to have enabled AllowSessionProvisioning; the installed config is never touched. Call end-session (or delete the directory) when finished.",
    {
      mcpServer: prop(
        'boolean',
        "Enable the provisioned instance's localhost MCP/HTTP server (default true)",
      ),
      commands: {
        type: 'array',
        description: 'Command names to enable in the session (default: the agent observation/action set)',
        items: { type: 'string' },
      },
    },
    [],
    false,
  ),
  tool(
    'end-session',
    "Tear down a provisioned session (from provision-session) by deleting its directory. Requires the session's token; the teardown credential provision-session returned. Stop the session's mcec.exe first, or its files stay locked. MCEC also reaps stale session dirs on launch.",
    {
      sessionId: prop('string', 'The sessionId returned by provision-session'),
      token: prop('string', 'The token returned by provision-session (the teardown credential)'),
    },
    ['sessionId', 'token'],
    false,
  ),
];

/** The tools/list entries (name, description, inputSchema), each a fresh copy: what tools/list answers. */
export function toolListings(): ToolListing[] {
  return TOOL_LISTINGS.map(listingOf);
}

/** A fresh copy of a tools/list entry's wire fields (name, description, inputSchema), nothing else. */
export function listingOf({ name, description, inputSchema }: ToolListing): ToolListing {
  return { name, description, inputSchema: structuredClone(inputSchema) };
}
