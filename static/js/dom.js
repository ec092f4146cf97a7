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

// flash marks an element as just changed for a moment.
// Restarting a CSS animation needs a reflow between removing and adding its
// class; flashes are batched into the next frame so that a burst of changes
// costs one reflow, not one each (a forced layout per message kept the page
// seconds behind a busy cluster).
const flashing = new Set();
let flashFrame = 0;

export function flash(node) {
  flashing.add(node);
  if (flashFrame) return;
  flashFrame = requestAnimationFrame(() => {
    flashFrame = 0;
    const nodes = [...flashing];
    flashing.clear();
    for (const n of nodes) n.classList.remove("flash");
    void document.body.offsetWidth;
    for (const n of nodes) n.classList.add("flash");
  });
}

// stageChips renders a request's pipeline: authn → authz → admission → etcd.
export function stageChips(stages) {
  const wrap = el("span", { class: "stages", "data-testid": "stages" });
  (stages || []).forEach((s, i) => {
    if (i > 0) wrap.append(el("span", { class: "stage-arrow", "aria-hidden": "true" }, "→"));
    wrap.append(el("span", {
      class: `stage stage-${s.state}`, "data-stage": s.name, "data-state": s.state, title: `${s.name}: ${s.state}`,
    }, s.label));
  });
  return wrap;
}

// safeHref keeps only the dashboard's own relative links.
export function safeHref(href) {
  return typeof href === "string" && href.startsWith("/") && !href.startsWith("//") ? href : null;
}
