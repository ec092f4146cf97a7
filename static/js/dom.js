// Small DOM helpers. Every text goes through textContent and every attribute
// through setAttribute, so data from the cluster is never parsed as HTML.

// el builds an element: el("a", {href: "/x", "data-testid": "y"}, "text", child).
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else node.setAttribute(name, String(value));
  }
  for (const child of children) {
    if (child === undefined || child === null || child === "") continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// byTestId finds the element with data-testid equal to id.
export function byTestId(id, root = document) {
  return root.querySelector(`[data-testid="${CSS.escape(id)}"]`);
}

// byData finds the first element whose data attribute `name` equals value.
export function byData(selector, name, value, root = document) {
  for (const node of root.querySelectorAll(selector)) {
    if (node.dataset[name] === value) return node;
  }
  return null;
}

// clock shows the time of day with milliseconds.
export function clock(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso || "";
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

// flash marks an element as just changed for a moment: a ring that fades
// in FLASH_STEPS steps over FLASH_MS (the .flash class, then .flash-1,
// .flash-2, ...). The steps are class changes made here, not a CSS
// animation: an animated element is a layer of its own, and every flash
// starting or ending rebuilt the page's layers and had the (software)
// compositor draw each step; a class change is a small repaint of the
// element. Flashes start together in the next frame, after one style pass
// (to know which elements are drawn) and no layout, and every flashing
// element steps on a shared tick (FLASH_TICK_MS on the clock), so a burst
// of changes fades in a few frames a second, not one per element. An
// element still flashing keeps its flash.
// At most MAX_FLASHING elements flash at once: past that the page is
// showing a burst of changes, each drawn but not all highlighted. An
// element the browser is not rendering (off screen in a
// content-visibility: auto region) does not flash, and one that stopped
// being rendered while flashing stops.
const MAX_FLASHING = 32;
const FLASH_MS = 1400;
const FLASH_STEPS = 4;
const FLASH_TICK_MS = 175;
const flashing = new Map(); // element wearing the class -> [start, step]
const queued = new Set();
let flashFrame = 0;
let flashTick = 0;

// rendered reports whether the browser draws n: connected, and not inside
// a subtree it skips. It needs the page's style up to date, so a frame
// asks it of every element before changing any class (one style pass, not
// one per element).
function rendered(n) {
  if (!n.isConnected) return false;
  return typeof n.checkVisibility !== "function" || n.checkVisibility({ contentVisibilityAuto: true });
}

function setFlashStep(n, from, to) {
  if (from > 0) n.classList.remove(`flash-${from}`);
  if (to >= FLASH_STEPS) {
    n.classList.remove("flash");
    flashing.delete(n);
    return;
  }
  if (to > 0) n.classList.add(`flash-${to}`);
  flashing.get(n)[1] = to;
}

// stepFlashes, in a frame: each flashing element shows the step its age
// calls for, and ends after FLASH_MS or once it is no longer drawn.
function stepFlashes() {
  flashTick = 0;
  const now = performance.now();
  const moves = [];
  for (const [n, [start, step]] of flashing) {
    const to = rendered(n) ? Math.floor(((now - start) * FLASH_STEPS) / FLASH_MS) : FLASH_STEPS;
    if (to !== step) moves.push([n, step, to]);
  }
  for (const [n, from, to] of moves) setFlashStep(n, from, to);
  scheduleFlashTick();
}

function scheduleFlashTick() {
  if (flashTick || flashing.size === 0) return;
  flashTick = setTimeout(() => requestAnimationFrame(stepFlashes), FLASH_TICK_MS - (Date.now() % FLASH_TICK_MS));
}

export function flash(node) {
  queued.add(node);
  if (flashFrame) return;
  flashFrame = requestAnimationFrame(() => {
    flashFrame = 0;
    // Read first: which flashing elements left the screen, which queued
    // ones may flash. Then write.
    const stop = [...flashing.keys()].filter((n) => !rendered(n));
    const start = [];
    let room = MAX_FLASHING - flashing.size + stop.length;
    for (const n of queued) {
      if (room <= 0) break;
      if (flashing.has(n) || !rendered(n)) continue;
      start.push(n);
      room--;
    }
    queued.clear();
    for (const n of stop) setFlashStep(n, flashing.get(n)[1], FLASH_STEPS);
    const now = performance.now();
    for (const n of start) {
      n.classList.add("flash");
      flashing.set(n, [now, 0]);
    }
    scheduleFlashTick();
  });
}

// pacer returns a function that schedules fn for an animation frame, at
// most once every ms: calls in between are gathered into one run, on a
// boundary (a multiple of ms on the clock) that every pacer of the same ms
// shares, so the panels they update are laid out together in one frame. A
// call after a quiet spell runs in the next frame.
export function pacer(fn, ms) {
  let scheduled = false;
  let last = -Infinity;
  const run = () => {
    scheduled = false;
    last = performance.now();
    fn();
  };
  return () => {
    if (scheduled) return;
    scheduled = true;
    if (performance.now() - last >= ms) requestAnimationFrame(run);
    else setTimeout(() => requestAnimationFrame(run), ms - (Date.now() % ms));
  };
}

// stageStart is when a request entered a stage, for people ("+0.39 ms"),
// or "" when the message does not say.
export function stageStart(s) {
  return Number.isFinite(s.startUs) ? `+${(s.startUs / 1000).toFixed(2)} ms` : "";
}

// stageChips renders a request's pipeline: authn → authz → admission → etcd.
export function stageChips(stages) {
  const wrap = el("span", { class: "stages", "data-testid": "stages" });
  (stages || []).forEach((s, i) => {
    if (i > 0) wrap.append(el("span", { class: "stage-arrow", "aria-hidden": "true" }, "→"));
    const start = stageStart(s);
    wrap.append(el("span", {
      class: `stage stage-${s.state}`, "data-stage": s.name, "data-state": s.state,
      title: start ? `${s.name}: ${s.state}, entered ${start.slice(1)} after the request arrived` : `${s.name}: ${s.state}`,
    }, s.label));
  });
  return wrap;
}

// safeHref keeps only the dashboard's own relative links.
export function safeHref(href) {
  return typeof href === "string" && href.startsWith("/") && !href.startsWith("//") ? href : null;
}
