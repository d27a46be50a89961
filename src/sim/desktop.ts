/** The simulator's fake Windows desktop: windows, UI Automation trees, displays, and their pixels. */
import type { WindowInfo } from '../contract/types.js';
import { blit, createRaster, fillRect, type Raster, type Rgb, strokeRect } from './raster.js';

/** A UI Automation element as MCEC reports it (mcec-wire §2). */
export interface UiaElement {
  controlType: string;
  x: number;
  y: number;
  width: number;
  height: number;
  isEnabled: boolean;
  isOffscreen: boolean;
  name?: string;
  automationId?: string;
  className?: string;
  value?: string;
  isSelected?: boolean;
  children: UiaElement[];
}

/** What driving an element does to the desktop (simulator-only; never on the wire). */
export type ElementEffect = 'close-window' | 'open-save-as';

/** An element as the desktop holds it: the wire fields plus the effect of invoking it. Only the desktop changes it. */
interface ElementState extends UiaElement {
  effect?: ElementEffect;
  /**
   * A password box (UIA IsPassword): drawn as one dot per character, its value never on the wire (UIA's
   * ValuePattern refuses it) and read by OCR as dots.
   */
  isPassword?: boolean;
  children: ElementState[];
}

/**
 * An element of the simulated tree as tools see it: read-only, so only the desktop's methods (`setValue`,
 * `select`, `typeText`, moving a window) change it.
 */
export type SimElement = Readonly<Omit<ElementState, 'children'>> & {
  readonly children: readonly SimElement[];
};

/** A top-level window as the desktop holds it. Only the desktop changes it. */
interface WindowState extends WindowInfo {
  /** Runs elevated: actuation fails with target-elevated. */
  elevated: boolean;
  /** Captures come back all black (a protected video surface). */
  blankCapture: boolean;
  /** Minimized: parked at -32000,-32000 as a 160x28 caption, and captured black (PrintWindow has nothing to draw). */
  minimized?: boolean;
  /** Bounds to go back to on restore (set by minimize and maximize). */
  restoreBounds?: Rect;
  /** Drawing style. */
  titleBar: Rgb;
  client: Rgb;
  text: Rgb;
  tree: ElementState;
}

/** A top-level window of the fake desktop as tools see it: read-only (the desktop's methods move, resize... it). */
export type SimWindow = Readonly<Omit<WindowState, 'tree' | 'restoreBounds'>> & {
  readonly tree: SimElement;
  readonly restoreBounds?: Readonly<Rect>;
};

/** How a tool names its target window (the real server's five selector properties). */
export interface WindowTarget {
  window?: string;
  handle?: number;
  process?: string;
  className?: string;
  foreground?: boolean;
}

/** Why a window could not be resolved: the real codes. */
export interface TargetMiss {
  code: string;
  category: 'no-target' | 'stale-element' | 'ambiguous-selector';
  detail: string;
}

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** One monitor as the displays tool reports it. */
export interface DisplayInfo {
  index: number;
  primary: boolean;
  deviceName: string;
  bounds: Rect;
  workingArea: Rect;
  dpi: number;
  scale: number;
}

/** A monitor: the first is the primary, its device name counts from 1, its scale is its dpi over 96. */
function monitor(index: number, bounds: Rect, workingHeight: number, dpi: number): DisplayInfo {
  return {
    index,
    primary: index === 0,
    deviceName: `\\\\.\\DISPLAY${index + 1}`,
    bounds,
    workingArea: { ...bounds, height: workingHeight },
    dpi,
    scale: dpi / 96,
  };
}

/** The two monitors of the fake desktop: a 1080p primary and a 125 % secondary to its right. */
export const DISPLAYS: readonly DisplayInfo[] = [
  monitor(0, { x: 0, y: 0, width: 1920, height: 1080 }, 1032, 96),
  monitor(1, { x: 1920, y: 0, width: 1280, height: 1024 }, 984, 120),
];

/** The union of all monitors. */
export const VIRTUAL_BOUNDS: Rect = { x: 0, y: 0, width: 3200, height: 1080 };

/** The element-matching modes of find / wait-for / invoke / click (`by`). */
export const MATCH_BY = ['name', 'automationid', 'classname'] as const;
export type MatchBy = (typeof MATCH_BY)[number];

/** Handles of the windows present at start, top of the z-order first. */
export const HANDLES = {
  saveAs: 131330,
  notepad: 65552,
  commandPrompt: 196868,
  videoPlayer: 262410,
} as const;

/** Control types that hold text typed or pasted into them while they have keyboard focus. */
const TYPABLE = new Set(['Edit', 'Document', 'ComboBox']);

/** The Notepad editor's text: it exercises the server's escaping (+ < > & ' and non-ASCII). */
export const NOTEPAD_TEXT = "Hello + <world> & 'friends' — café ☕ 1+1=2";

/** Window-relative (or screen) bounds: x, y, width, height. */
type Bounds = [x: number, y: number, width: number, height: number];

type ElementSpec = Omit<
  ElementState,
  'x' | 'y' | 'width' | 'height' | 'children' | 'isEnabled' | 'isOffscreen'
> & {
  isEnabled?: boolean;
  isOffscreen?: boolean;
};

/** Build an element from window-relative bounds; `origin` makes them absolute screen pixels. */
function elementAt(
  origin: { x: number; y: number },
  spec: ElementSpec,
  bounds: Bounds,
  children: ElementState[] = [],
): ElementState {
  const { isEnabled = true, isOffscreen = false, ...rest } = spec;
  return {
    ...rest,
    controlType: spec.controlType,
    x: origin.x + bounds[0],
    y: origin.y + bounds[1],
    width: bounds[2],
    height: bounds[3],
    isEnabled,
    isOffscreen,
    children,
  };
}

/** Builds elements of one window: window-relative bounds, the window's origin applied once. */
type Place = (spec: ElementSpec, bounds: Bounds, children?: ElementState[]) => ElementState;

/** The element builder of a window at `origin`. */
function placeIn(origin: { x: number; y: number }): Place {
  return (spec, bounds, children = []) => elementAt(origin, spec, bounds, children);
}

/** A standard title bar with its three caption buttons. */
function titleBar(el: Place, title: string, width: number): ElementState {
  return el(
    { controlType: 'TitleBar', automationId: 'TitleBar', name: title },
    [0, 0, width, 32],
    captionButtons(el, width),
  );
}

function captionButtons(el: Place, width: number, closeEffect?: ElementEffect): ElementState[] {
  return [
    el({ controlType: 'Button', name: 'Minimize', automationId: 'Minimize' }, [width - 96, 0, 32, 32]),
    el({ controlType: 'Button', name: 'Maximize', automationId: 'Maximize' }, [width - 64, 0, 32, 32]),
    el(
      {
        controlType: 'Button',
        name: 'Close',
        automationId: 'Close',
        ...(closeEffect ? { effect: closeEffect } : {}),
      },
      [width - 32, 0, 32, 32],
    ),
  ];
}

function windowRoot(w: WindowLook, children: ElementState[]): ElementState {
  return elementAt(
    w,
    { controlType: 'Window', name: w.title, className: w.className },
    [0, 0, w.width, w.height],
    children,
  );
}

/** A window as the desktop holds it, apart from its handle and tree. */
type WindowLook = Omit<WindowState, 'tree' | 'handle'>;

/** The windows present at start. */
type StartWindow = keyof typeof HANDLES | 'signIn';

/** Who owns each starting window and where it sits (screen pixels: x, y, width, height). */
const PLACES: Record<
  StartWindow,
  [title: string, className: string, processName: string, processId: number, bounds: Bounds]
> = {
  saveAs: ['Save As', '#32770', 'notepad', 4120, [200, 140, 640, 480]],
  notepad: ['Untitled - Notepad', 'Notepad', 'notepad', 4120, [120, 80, 800, 600]],
  commandPrompt: ['Administrator: Command Prompt', 'ConsoleWindowClass', 'cmd', 7312, [960, 520, 720, 400]],
  videoPlayer: ['Video Player', 'ApplicationFrameWindow', 'Video.UI', 9044, [2000, 160, 800, 450]],
  signIn: ['Sign in', '#32770', 'CredentialUIBroker', 5220, [1000, 200, 480, 300]],
};

/** How each starting window is drawn. */
const PALETTES: Record<StartWindow, Pick<WindowState, 'titleBar' | 'client' | 'text'>> = {
  saveAs: { titleBar: [243, 243, 243], client: [249, 249, 249], text: [20, 20, 20] },
  notepad: { titleBar: [0, 120, 215], client: [255, 255, 255], text: [30, 30, 30] },
  commandPrompt: { titleBar: [255, 255, 255], client: [12, 12, 12], text: [204, 204, 204] },
  videoPlayer: { titleBar: [32, 32, 32], client: [0, 0, 0], text: [255, 255, 255] },
  signIn: { titleBar: [243, 243, 243], client: [249, 249, 249], text: [20, 20, 20] },
};

/**
 * A starting window with this handle: its place, palette and flags, and the tree `children` builds (with
 * the window's element builder).
 */
function startWindow(
  name: StartWindow,
  handle: number,
  flags: { elevated?: boolean; blankCapture?: boolean },
  children: (el: Place, title: string) => ElementState[],
): WindowState {
  const [title, className, processName, processId, [x, y, width, height]] = PLACES[name];
  const look: WindowLook = {
    title,
    className,
    processName,
    processId,
    x,
    y,
    width,
    height,
    elevated: flags.elevated ?? false,
    blankCapture: flags.blankCapture ?? false,
    ...PALETTES[name],
  };
  return { ...look, handle, tree: windowRoot(look, children(placeIn(look), title)) };
}

function notepad(): WindowState {
  return startWindow('notepad', HANDLES.notepad, {}, (el, title) => {
    const menuItem = (name: string, x: number, items: ElementState[] = []) =>
      el({ controlType: 'MenuItem', name }, [x, 32, 48, 24], items);
    const fileItems = [
      el({ controlType: 'MenuItem', name: 'New', isOffscreen: true }, [4, 56, 200, 24]),
      el({ controlType: 'MenuItem', name: 'Open...', isOffscreen: true }, [4, 80, 200, 24]),
      el({ controlType: 'MenuItem', name: 'Save', isOffscreen: true }, [4, 104, 200, 24]),
      el(
        { controlType: 'MenuItem', name: 'Save As...', isOffscreen: true, effect: 'open-save-as' },
        [4, 128, 200, 24],
      ),
    ];
    return [
      titleBar(el, title, 800),
      el(
        { controlType: 'MenuBar', name: 'Application', automationId: 'MenuBar' },
        [0, 32, 800, 24],
        [
          menuItem('File', 4, fileItems),
          menuItem('Edit', 56),
          menuItem('Format', 108),
          menuItem('View', 160),
          menuItem('Help', 212),
        ],
      ),
      el(
        {
          controlType: 'Document',
          name: 'Text Editor',
          automationId: '15',
          className: 'Edit',
          value: NOTEPAD_TEXT,
        },
        [0, 56, 800, 520],
      ),
      el(
        { controlType: 'StatusBar', name: 'Status Bar', automationId: 'StatusBar' },
        [0, 576, 800, 24],
        [
          el({ controlType: 'Text', name: 'Ln 1, Col 1' }, [420, 580, 100, 16]),
          el({ controlType: 'Text', name: '100%' }, [530, 580, 50, 16]),
          el({ controlType: 'Text', name: 'Windows (CRLF)' }, [590, 580, 110, 16]),
          el({ controlType: 'Text', name: 'UTF-8' }, [710, 580, 80, 16]),
        ],
      ),
    ];
  });
}

/** The Save As dialog: three buttons named Save (command bar, hidden default, the real one). */
function saveAs(handle: number): WindowState {
  return startWindow('saveAs', handle, {}, (el, title) => [
    el(
      { controlType: 'TitleBar', automationId: 'TitleBar', name: title },
      [0, 0, 640, 32],
      [
        el(
          { controlType: 'Button', name: 'Close', automationId: 'Close', effect: 'close-window' },
          [608, 0, 32, 32],
        ),
      ],
    ),
    el(
      { controlType: 'ToolBar', name: 'Command Bar', automationId: 'CommandBar' },
      [0, 32, 640, 36],
      [
        el({ controlType: 'Button', name: 'Save', automationId: 'CommandBar_Save' }, [8, 36, 72, 28]),
        el(
          { controlType: 'Button', name: 'New folder', automationId: 'CommandBar_NewFolder' },
          [88, 36, 96, 28],
        ),
      ],
    ),
    ...saveAsBrowser(el),
    el(
      { controlType: 'Edit', name: 'File name:', automationId: '1001', className: 'Edit', value: '*.txt' },
      [120, 380, 500, 24],
    ),
    el(
      {
        controlType: 'ComboBox',
        name: 'Save as type:',
        automationId: 'FileTypeControlHost',
        value: 'Text Documents (*.txt)',
      },
      [120, 410, 500, 24],
    ),
    el(
      { controlType: 'Button', name: 'Save', automationId: 'SaveHiddenDefault', isOffscreen: true },
      [0, 0, 0, 0],
    ),
    closingButton(el, 'Save', '1', [420, 444, 96, 28]),
    closingButton(el, 'Cancel', '2', [528, 444, 96, 28]),
  ]);
}

/** A dialog's push button that closes it. */
function closingButton(el: Place, name: string, automationId: string, bounds: Bounds): ElementState {
  return el(
    { controlType: 'Button', name, automationId, className: 'Button', effect: 'close-window' },
    bounds,
  );
}

/** The Save As dialog's navigation pane and items view. */
function saveAsBrowser(el: Place): ElementState[] {
  const folders = ['Quick access', 'This PC', 'Documents', 'Downloads'];
  const files = ['notes-old.txt', 'Résumé.txt', 'todo + ideas.txt'];
  return [
    el(
      { controlType: 'Tree', name: 'Navigation Pane', automationId: '100' },
      [0, 68, 160, 300],
      stackedItems(el, 'TreeItem', folders, [8, 76, 144], 'Documents'),
    ),
    el(
      { controlType: 'List', name: 'Items View', automationId: 'ItemsView' },
      [160, 68, 480, 300],
      stackedItems(el, 'ListItem', files, [168, 76, 464]),
    ),
  ];
}

/** Items 22 px high stacked 24 px apart from `top` (the one named `selected` is selected). */
function stackedItems(
  el: Place,
  controlType: string,
  names: string[],
  [x, top, width]: [x: number, top: number, width: number],
  selected?: string,
): ElementState[] {
  return names.map((name, i) =>
    el({ controlType, name, ...(name === selected ? { isSelected: true } : {}) }, [
      x,
      top + 24 * i,
      width,
      22,
    ]),
  );
}

function commandPrompt(): WindowState {
  return startWindow('commandPrompt', HANDLES.commandPrompt, { elevated: true }, (el, title) => [
    titleBar(el, title, 720),
    el(
      {
        controlType: 'Document',
        name: 'Text Area',
        automationId: 'Text Area',
        value:
          'Microsoft Windows [Version 10.0.22631.3880]\r\n(c) Microsoft Corporation. All rights reserved.\r\n\r\nC:\\Windows\\system32>',
      },
      [0, 32, 704, 368],
    ),
    el({ controlType: 'ScrollBar', name: 'Vertical', automationId: 'VerticalScrollBar' }, [704, 32, 16, 368]),
  ]);
}

function videoPlayer(): WindowState {
  return startWindow('videoPlayer', HANDLES.videoPlayer, { blankCapture: true }, (el, title) => [
    titleBar(el, title, 800),
    el({ controlType: 'Pane', name: 'Video', automationId: 'VideoSurface' }, [0, 32, 800, 362]),
    el({ controlType: 'Button', name: 'Play', automationId: 'PlayPauseButton' }, [16, 402, 40, 32]),
    el(
      { controlType: 'Slider', name: 'Seek', automationId: 'ProgressSlider', value: '0:42 / 3:15' },
      [64, 410, 600, 16],
    ),
    el({ controlType: 'Button', name: 'Full screen', automationId: 'FullScreenButton' }, [744, 402, 40, 32]),
  ]);
}

/**
 * A sign-in dialog (opened on demand, see `Desktop.openSignIn`): a user name box, a password box (dots) and an
 * API token box that shows what is typed, so tests can prove a secret's pixels are gone from a capture.
 */
function signIn(handle: number): WindowState {
  return startWindow('signIn', handle, {}, (el, title) => [
    el(
      { controlType: 'TitleBar', automationId: 'TitleBar', name: title },
      [0, 0, 480, 32],
      [
        el(
          { controlType: 'Button', name: 'Close', automationId: 'Close', effect: 'close-window' },
          [448, 0, 32, 32],
        ),
      ],
    ),
    el({ controlType: 'Text', name: 'Sign in to Contoso' }, [24, 44, 300, 20]),
    el(
      { controlType: 'Edit', name: 'User name', automationId: 'UserName', className: 'Edit' },
      [24, 80, 432, 28],
    ),
    el(
      {
        controlType: 'Edit',
        name: 'Password',
        automationId: 'PasswordBox',
        className: 'Edit',
        isPassword: true,
      },
      [24, 124, 432, 28],
    ),
    el(
      { controlType: 'Edit', name: 'API token', automationId: 'ApiToken', className: 'Edit' },
      [24, 168, 432, 28],
    ),
    closingButton(el, 'Sign in', '1', [252, 250, 96, 28]),
    closingButton(el, 'Cancel', '2', [360, 250, 96, 28]),
  ]);
}

/** The WindowInfo the wire carries for a window. */
export function windowInfo(w: SimWindow): WindowInfo {
  return {
    handle: w.handle,
    title: w.title,
    className: w.className,
    processName: w.processName,
    processId: w.processId,
    x: w.x,
    y: w.y,
    width: w.width,
    height: w.height,
  };
}

/** The wire fields of one element in the real key order, with `children` given by the caller. */
export function uiaNode(e: SimElement, children: UiaElement[]): UiaElement {
  const out: Partial<UiaElement> = {
    controlType: e.controlType,
    x: e.x,
    y: e.y,
    width: e.width,
    height: e.height,
    isEnabled: e.isEnabled,
    isOffscreen: e.isOffscreen,
  };
  if (e.name !== undefined) out.name = e.name;
  if (e.automationId !== undefined) out.automationId = e.automationId;
  if (e.className !== undefined) out.className = e.className;
  if (e.value !== undefined && !e.isPassword) out.value = e.value;
  if (e.isSelected !== undefined) out.isSelected = e.isSelected;
  out.children = children;
  return out as UiaElement;
}

/** The wire form of an element and its subtree (simulator-only fields dropped). */
export function toUiaElement(e: SimElement): UiaElement {
  return uiaNode(e, e.children.map(toUiaElement));
}

/** Every element of a tree below its root, in document order. */
export function descendants<E extends { readonly children: readonly E[] }>(root: E): E[] {
  const out: E[] = [];
  const walk = (e: E) => {
    for (const c of e.children) {
      out.push(c);
      walk(c);
    }
  };
  walk(root);
  return out;
}

function matches(e: SimElement, by: MatchBy, value: string): boolean {
  if (by === 'automationid') return e.automationId === value;
  if (by === 'classname') return e.className === value;
  return e.name === value;
}

/** Module-wide cache of rendered windows, keyed by what they look like (same look, same bytes). */
const rasterCache = new Map<string, Raster>();
const RASTER_CACHE_MAX = 32;

function cacheKey(w: SimWindow): string {
  return JSON.stringify([w.title, w.width, w.height, w.blankCapture, w.minimized === true, w.x, w.y, w.tree]);
}

/** Shift an element tree by (dx, dy): element bounds are absolute screen pixels. */
function shiftTree(e: ElementState, dx: number, dy: number): void {
  e.x += dx;
  e.y += dy;
  for (const c of e.children) shiftTree(c, dx, dy);
}

/** A deterministic fake desktop; each simulator owns one (its windows change as tools act on them). */
export class Desktop {
  /** Top of the z-order first. */
  private open: WindowState[];
  private readonly closed = new Set<number>();
  private nextHandle = 327_682;
  private nextPid = 11_000;
  /** The system text clipboard (the clipboard tool reads and writes it). */
  private clipboardText = '';
  /** The control with keyboard focus: typed and pasted text goes there. */
  private focused?: { window: WindowState; element: ElementState };

  constructor() {
    this.open = [saveAs(HANDLES.saveAs), notepad(), commandPrompt(), videoPlayer()];
  }

  /** The desktop's own record of an open window (tools hold read-only views of it). */
  private stateOf(w: SimWindow): WindowState {
    const state = this.open.find((x) => x === w);
    if (!state) throw new Error(`window ${w.handle} is not open on this desktop`);
    return state;
  }

  /** The desktop's own record of an element of an open window. */
  private elementOf(w: SimWindow, e: SimElement): ElementState {
    const tree = this.stateOf(w).tree;
    const state = tree === e ? tree : descendants(tree).find((x) => x === e);
    if (!state) throw new Error(`element ${e.controlType} '${e.name ?? ''}' is not in window ${w.handle}`);
    return state;
  }

  /** The system text clipboard. */
  get clipboard(): string {
    return this.clipboardText;
  }

  /** Put text on the clipboard (the clipboard tool's set). */
  setClipboard(text: string): void {
    this.clipboardText = text;
  }

  /** Replace a text box's value (invoke setvalue). */
  setValue(w: SimWindow, e: SimElement, text: string): void {
    this.elementOf(w, e).value = text;
  }

  /** Whether captures of a window come back all black (a protected surface such as the Video Player's). */
  setBlankCapture(w: SimWindow, blank: boolean): void {
    this.stateOf(w).blankCapture = blank;
  }

  /** Select an item: its selectable siblings are deselected (invoke select). */
  select(w: SimWindow, e: SimElement): void {
    const item = this.elementOf(w, e);
    const tree = this.stateOf(w).tree;
    const parent = [tree, ...descendants(tree)].find((p) => p.children.includes(item));
    for (const sibling of parent?.children ?? [])
      if (sibling.isSelected !== undefined) sibling.isSelected = false;
    item.isSelected = true;
  }

  /** Open windows, top of the z-order first. */
  windows(): SimWindow[] {
    return [...this.open];
  }

  /** The foreground window (top of the z-order). */
  foreground(): SimWindow | undefined {
    return this.open[0];
  }

  /** A window by handle, 'closed' for a handle that was closed, undefined for one never seen. */
  byHandle(handle: number): SimWindow | 'closed' | undefined {
    const w = this.open.find((x) => x.handle === handle);
    if (w) return w;
    return this.closed.has(handle) ? 'closed' : undefined;
  }

  /** Resolve a target to exactly one window, as the real WindowResolver does. */
  resolve(target: WindowTarget): { window: SimWindow } | { miss: TargetMiss } {
    if (target.handle !== undefined) {
      const w = this.byHandle(target.handle);
      if (w === 'closed')
        return {
          miss: {
            code: 'window-closed',
            category: 'stale-element',
            detail: `Window handle ${target.handle} belonged to a window that has closed; query or find again for a fresh handle.`,
          },
        };
      if (!w)
        return {
          miss: {
            code: 'window-not-found',
            category: 'no-target',
            detail: `No window has handle ${target.handle}.`,
          },
        };
      return { window: w };
    }
    let found = this.open;
    if (target.foreground) found = found.slice(0, 1);
    if (target.window !== undefined) {
      const needle = target.window.toLowerCase();
      found = found.filter((w) => w.title.toLowerCase().includes(needle));
    }
    if (target.process !== undefined) {
      const p = target.process.toLowerCase().replace(/\.exe$/, '');
      found = found.filter((w) => w.processName.toLowerCase() === p);
    }
    if (target.className !== undefined) found = found.filter((w) => w.className === target.className);
    const what = describeTarget(target);
    if (found.length === 0)
      return {
        miss: { code: 'window-not-found', category: 'no-target', detail: `No matching window for ${what}.` },
      };
    if (found.length > 1)
      return {
        miss: {
          code: `selector-matched-${found.length}`,
          category: 'ambiguous-selector',
          detail: `Selector ${what} matched ${found.length} windows; refine with handle, process or className.`,
        },
      };
    return { window: found[0]! };
  }

  /** Elements of a window matching a selector, in document order. */
  findElements(w: SimWindow, by: MatchBy, value: string): SimElement[] {
    return descendants(w.tree).filter((e) => matches(e, by, value));
  }

  /** The deepest on-screen element of the topmost window under a screen point. */
  hitTest(x: number, y: number): { window: SimWindow; element: SimElement } | undefined {
    const inside = (r: Rect) => x >= r.x && y >= r.y && x < r.x + r.width && y < r.y + r.height;
    const w = this.open.find(inside);
    if (!w) return undefined;
    let hit: SimElement = w.tree;
    for (;;) {
      const next: SimElement | undefined = [...hit.children]
        .reverse()
        .find((c) => !c.isOffscreen && inside(c));
      if (!next) break;
      hit = next;
    }
    return { window: w, element: hit };
  }

  /** A fresh process id for a launched process. */
  nextProcessId(): number {
    this.nextPid += 4;
    return this.nextPid;
  }

  /** Put a window on top of the z-order (the foreground). */
  bringToFront(window: SimWindow): void {
    const w = this.stateOf(window);
    this.open = [w, ...this.open.filter((x) => x !== w)];
  }

  /** Move a window's top-left to (x, y), its elements with it. */
  moveWindow(window: SimWindow, x: number, y: number): void {
    const w = this.stateOf(window);
    shiftTree(w.tree, x - w.x, y - w.y);
    w.x = x;
    w.y = y;
    w.tree.x = x;
    w.tree.y = y;
  }

  /** Resize a window (at least 1x1); its elements keep their places. */
  resizeWindow(window: SimWindow, width: number, height: number): void {
    const w = this.stateOf(window);
    w.width = Math.max(1, width);
    w.height = Math.max(1, height);
    w.tree.width = w.width;
    w.tree.height = w.height;
  }

  /** Minimize: the window reports Windows' parked rect and captures black until restored. */
  minimize(window: SimWindow): void {
    const w = this.stateOf(window);
    if (w.minimized) return;
    w.restoreBounds ??= { x: w.x, y: w.y, width: w.width, height: w.height };
    w.minimized = true;
    this.moveWindow(w, -32_000, -32_000);
    this.resizeWindow(w, 160, 28);
  }

  /** Maximize to the working area of the monitor the window is on. */
  maximize(window: SimWindow): void {
    const w = this.stateOf(window);
    const bounds = w.restoreBounds ?? { x: w.x, y: w.y, width: w.width, height: w.height };
    const display =
      DISPLAYS.find((d) => bounds.x >= d.bounds.x && bounds.x < d.bounds.x + d.bounds.width) ?? DISPLAYS[0]!;
    w.restoreBounds = bounds;
    w.minimized = false;
    this.moveWindow(w, display.workingArea.x, display.workingArea.y);
    this.resizeWindow(w, display.workingArea.width, display.workingArea.height);
  }

  /** Restore the bounds from before minimize or maximize. */
  restore(window: SimWindow): void {
    const w = this.stateOf(window);
    const b = w.restoreBounds;
    w.minimized = false;
    w.restoreBounds = undefined;
    if (!b) return;
    this.moveWindow(w, b.x, b.y);
    this.resizeWindow(w, b.width, b.height);
  }

  /** Close a window; its handle stays known as closed (later use is window-closed). */
  close(handle: number): void {
    const before = this.open.length;
    this.open = this.open.filter((w) => w.handle !== handle);
    if (this.open.length !== before) this.closed.add(handle);
  }

  /**
   * Give keyboard focus to a control of `w` (focus, a click, invoke setfocus). Only text boxes keep it as the
   * target of typing; anything else leaves no control focused.
   */
  setFocus(w: SimWindow, e: SimElement): void {
    this.focused =
      TYPABLE.has(e.controlType) && !e.isOffscreen
        ? { window: this.stateOf(w), element: this.elementOf(w, e) }
        : undefined;
  }

  /** The focused text box, while its window is open. */
  focusedElement(): { window: SimWindow; element: SimElement } | undefined {
    return this.focusedState();
  }

  private focusedState(): { window: WindowState; element: ElementState } | undefined {
    const f = this.focused;
    return f && this.open.includes(f.window) ? f : undefined;
  }

  /** Type text into the focused text box (`chars:`); false when no text box has focus. */
  typeText(text: string): boolean {
    const f = this.focusedState();
    if (!f) return false;
    f.element.value = (f.element.value ?? '') + text;
    return true;
  }

  /** Paste the clipboard into the focused text box (ctrl-v); false when no text box has focus. */
  paste(): boolean {
    return this.typeText(this.clipboardText);
  }

  /** Open the Sign in dialog on top (a new handle each time), unless one is open. */
  openSignIn(): SimWindow {
    const existing = this.open.find((w) => w.title === 'Sign in');
    if (existing) return existing;
    const w = signIn(this.nextHandle);
    this.nextHandle += 2;
    this.open.unshift(w);
    return w;
  }

  /** Open a fresh Save As dialog on top (a new handle each time), unless one is open. */
  openSaveAs(): SimWindow {
    const existing = this.open.find((w) => w.title === 'Save As');
    if (existing) return existing;
    const w = saveAs(this.nextHandle);
    this.nextHandle += 2;
    this.open.unshift(w);
    return w;
  }

  /** The pixels of a window as a capture sees them (cached by appearance). */
  renderWindow(w: SimWindow): Raster {
    const key = cacheKey(w);
    let r = rasterCache.get(key);
    if (!r) {
      r = drawWindow(w);
      if (rasterCache.size >= RASTER_CACHE_MAX) rasterCache.delete(rasterCache.keys().next().value!);
      rasterCache.set(key, r);
    }
    return r;
  }

  /** The pixels of a screen region: wallpaper on the monitors, black elsewhere, windows on top. */
  renderRegion(region: Rect): Raster {
    const r = createRaster(region.width, region.height, [0, 0, 0]);
    for (const d of DISPLAYS)
      fillRect(
        r,
        d.bounds.x - region.x,
        d.bounds.y - region.y,
        d.bounds.width,
        d.bounds.height,
        [0, 99, 177],
      );
    for (const w of [...this.open].reverse()) blit(r, this.renderWindow(w), w.x - region.x, w.y - region.y);
    return r;
  }

  /**
   * What OCR reads in a screen rectangle: the text of the visible elements whose centre lies inside it and is
   * not covered by a window above (only `only`'s elements when given, as a window capture sees them).
   */
  textIn(rect: Rect, only?: SimWindow): string[] {
    const inside = (x: number, y: number) =>
      x >= rect.x && y >= rect.y && x < rect.x + rect.width && y < rect.y + rect.height;
    const lines: string[] = [];
    for (const w of only ? [only] : this.open) {
      if (w.blankCapture || w.minimized) continue;
      const bar = w.tree.children.find((c) => c.controlType === 'TitleBar');
      const [bx, by] = bar
        ? [bar.x + Math.floor(bar.width / 2), bar.y + Math.floor(bar.height / 2)]
        : [w.x, w.y];
      if (inside(bx, by) && (only || this.hitTest(bx, by)?.window === w)) lines.push(w.title);
      for (const e of descendants(w.tree)) {
        if (e.isOffscreen || e.width === 0) continue;
        const cx = e.x + Math.floor(e.width / 2);
        const cy = e.y + Math.floor(e.height / 2);
        if (!inside(cx, cy) || (!only && this.hitTest(cx, cy)?.window !== w)) continue;
        lines.push(...linesOf(e));
      }
    }
    return lines;
  }

  /** What OCR would read from a window: its title, then names and values of the visible elements. */
  textOf(w: SimWindow): string {
    if (w.blankCapture) return '';
    const lines: string[] = [w.title];
    for (const e of descendants(w.tree)) {
      if (e.isOffscreen || e.width === 0) continue;
      lines.push(...linesOf(e));
    }
    return lines.join('\n');
  }
}

const TEXTUAL = new Set(['Text', 'Button', 'MenuItem', 'ListItem', 'TreeItem']);

/** The lines OCR reads from one element: its value's lines, or the name of a textual control. */
function linesOf(e: SimElement): string[] {
  if (e.isPassword) return e.value ? ['•'.repeat(e.value.length)] : [];
  if (e.value !== undefined) return e.value.split(/\r?\n/).filter((l) => l.length > 0);
  return e.name && TEXTUAL.has(e.controlType) ? [e.name] : [];
}

/** A selector in words, for error details. */
export function describeTarget(t: WindowTarget): string {
  const parts: string[] = [];
  if (t.window !== undefined) parts.push(`window='${t.window}'`);
  if (t.process !== undefined) parts.push(`process='${t.process}'`);
  if (t.className !== undefined) parts.push(`className='${t.className}'`);
  if (t.foreground) parts.push('foreground');
  if (t.handle !== undefined) parts.push(`handle=${t.handle}`);
  return parts.join(' ') || '(no target)';
}

/** Stand-in glyphs: one bar per word, so text has a shape without depending on fonts. */
function drawText(r: Raster, text: string, x: number, y: number, maxWidth: number, color: Rgb): void {
  let cx = x;
  for (const word of text.split(/\s+/)) {
    if (word.length === 0) continue;
    const w = Math.min(word.length * 6, x + maxWidth - cx);
    if (w <= 0) break;
    fillRect(r, cx, y, w, 7, color);
    cx += w + 6;
  }
}

/** A password box's stand-in glyphs: one 6x6 dot per character, 10 px apart. */
function drawDots(r: Raster, count: number, x: number, y: number, maxWidth: number, color: Rgb): void {
  for (let i = 0; i < count && (i + 1) * 10 <= maxWidth; i++) fillRect(r, x + i * 10, y, 6, 6, color);
}

const BUTTON: Rgb = [225, 225, 225];
const BORDER: Rgb = [160, 160, 160];

function drawElement(r: Raster, w: SimWindow, e: SimElement): void {
  if (e.isOffscreen || e.width === 0 || e.height === 0) return;
  const x = e.x - w.x;
  const y = e.y - w.y;
  switch (e.controlType) {
    case 'TitleBar':
      fillRect(r, x, y, e.width, e.height, w.titleBar);
      drawText(
        r,
        e.name ?? '',
        x + 12,
        y + 12,
        e.width - 120,
        luminance(w.titleBar) > 128 ? [0, 0, 0] : [255, 255, 255],
      );
      break;
    case 'Button':
      fillRect(r, x, y, e.width, e.height, e.automationId === 'Close' ? [232, 17, 35] : BUTTON);
      strokeRect(r, x, y, e.width, e.height, BORDER);
      drawText(r, e.name ?? '', x + 8, y + Math.floor(e.height / 2) - 3, e.width - 16, [20, 20, 20]);
      break;
    case 'Edit':
    case 'Document':
    case 'ComboBox': {
      strokeRect(r, x, y, e.width, e.height, BORDER);
      if (e.isPassword) {
        drawDots(r, (e.value ?? '').length, x + 8, y + Math.floor(e.height / 2) - 3, e.width - 16, w.text);
        break;
      }
      const lines = (e.value ?? '').split(/\r?\n/);
      lines.forEach((line, i) => {
        drawText(r, line, x + 8, y + 8 + i * 14, e.width - 16, w.text);
      });
      if (e.controlType === 'ComboBox') fillRect(r, x + e.width - 24, y + 1, 23, e.height - 2, BUTTON);
      break;
    }
    case 'MenuBar':
    case 'StatusBar':
    case 'ToolBar':
      fillRect(r, x, y, e.width, e.height, [240, 240, 240]);
      break;
    case 'Tree':
    case 'List':
      fillRect(r, x, y, e.width, e.height, [255, 255, 255]);
      strokeRect(r, x, y, e.width, e.height, BORDER);
      break;
    case 'TreeItem':
    case 'ListItem':
      if (e.isSelected) fillRect(r, x, y, e.width, e.height, [204, 232, 255]);
      drawText(r, e.name ?? '', x + 6, y + 8, e.width - 12, [20, 20, 20]);
      break;
    case 'MenuItem':
    case 'Text':
      drawText(r, e.name ?? '', x + 4, y + 8, e.width - 8, [20, 20, 20]);
      break;
    case 'Slider':
      fillRect(r, x, y + 6, e.width, 4, [120, 120, 120]);
      fillRect(r, x + Math.floor(e.width / 5), y, 8, e.height, [0, 120, 215]);
      break;
    case 'ScrollBar':
      fillRect(r, x, y, e.width, e.height, [60, 60, 60]);
      break;
    default:
      break;
  }
  for (const c of e.children) drawElement(r, w, c);
}

function luminance(c: Rgb): number {
  return 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2];
}

function drawWindow(w: SimWindow): Raster {
  // A protected video surface (or a minimized window): PrintWindow hands back an all-black frame.
  if (w.blankCapture || w.minimized) return createRaster(w.width, w.height, [0, 0, 0]);
  const r = createRaster(w.width, w.height, w.client);
  for (const c of w.tree.children) drawElement(r, w, c);
  strokeRect(r, 0, 0, w.width, w.height, [90, 90, 90]);
  return r;
}
