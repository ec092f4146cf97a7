// The classroom tempo panel: sets realtime / slow / step and releases steps
// (the Next button, or N) through the dashboard, which writes the ConfigMap
// kube-system/glassplane-tempo as the logged-in user. The panel and the
// map's "waiting" marks follow that object live from the page's stream.
import { el, byTestId } from "./dom.js";
import { currentLang } from "./narration.js";
import { t as say } from "./i18n.js";

function isTempo(msg) {
  return msg.kind === "ConfigMap" && msg.namespace === "kube-system" && msg.name === "glassplane-tempo";
}

// fromData reads the object's data as the server's view model does.
function fromData(data = {}) {
  const waiting = Object.entries(data)
    .filter(([k]) => k.startsWith("waiting."))
    .map(([, v]) => v)
    .sort();
  return {
    mode: ["realtime", "slow", "step"].includes(data.mode) ? data.mode : "realtime",
    delay: data.delay || "2s",
    released: Number(data.released || 0),
    taken: Number(data.taken || 0),
    lastStep: data.lastStep || "",
    waiting,
  };
}

// mapBoxOf is the cluster map's box of a gate's component:
// "scheduler", "controller-manager", "node/sim-1" → node:sim-1.
function mapBoxOf(component) {
  return byTestId("map-box-" + component.replace(/^node\//, "node:"));
}

function render(panel, t) {
  const canChange = panel.dataset.canChange === "true";
  panel.dataset.mode = t.mode;
  panel.dataset.released = String(t.released);
  panel.dataset.taken = String(t.taken);
  for (const input of panel.querySelectorAll('input[name="mode"]')) input.checked = input.value === t.mode;
  const next = byTestId("tempo-next", panel);
  if (next) next.disabled = !canChange || t.mode !== "step";
  const last = byTestId("tempo-last", panel);
  last.dataset.step = t.lastStep;
  last.textContent = t.lastStep ? `${say("tempo.last", currentLang(), "last:")} ${t.lastStep}` : "";
  const list = byTestId("tempo-waiting", panel);
  list.replaceChildren(...(t.waiting || []).map((w) => el("li", { "data-testid": "tempo-waiting-item" }, w)));
  for (const box of document.querySelectorAll(".tempo-waiting-box")) box.classList.remove("tempo-waiting-box");
  for (const w of t.waiting || []) {
    const box = mapBoxOf(w.split(": ")[0]);
    if (box) box.classList.add("tempo-waiting-box");
  }
}

// watchSeen counts the tempo object's changes the stream delivered.
let watchSeen = 0;

async function submit(panel, form) {
  const error = byTestId("tempo-error", panel);
  error.hidden = true;
  const seen = watchSeen;
  const res = await fetch(form.action, {
    method: "POST",
    body: new URLSearchParams(new FormData(form)),
    headers: { Accept: "application/json" },
    credentials: "same-origin",
  });
  let body = {};
  try {
    body = await res.json();
  } catch {
    // An answer that is not JSON: keep the status line.
  }
  if (!res.ok) {
    error.textContent = body.message || `${res.status} ${res.statusText}`;
    error.hidden = false;
    return;
  }
  // The stream may already have brought newer changes (a component taking
  // the step just released); the answer must not paint over them.
  if (watchSeen === seen) render(panel, body);
}

export function tempo(stream) {
  const panel = document.getElementById("tempo");
  if (!panel) return;
  for (const form of panel.querySelectorAll("form")) {
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      submit(panel, form).catch((err) => {
        const error = byTestId("tempo-error", panel);
        error.textContent = String(err);
        error.hidden = false;
      });
    });
  }
  for (const input of panel.querySelectorAll('input[name="mode"]')) {
    input.addEventListener("change", () => byTestId("tempo-form", panel).requestSubmit());
  }
  document.addEventListener("keydown", (ev) => {
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if (ev.target.closest?.("input, textarea, select, [contenteditable]")) return;
    if (ev.key === "n" || ev.key === "N") {
      const next = byTestId("tempo-next", panel);
      if (next && !next.disabled) byTestId("tempo-next-form", panel).requestSubmit();
    }
  });
  document.addEventListener("glassplane:lang", (ev) => {
    const last = byTestId("tempo-last", panel);
    if (last.dataset.step) last.textContent = `${say("tempo.last", ev.detail.lang, "last:")} ${last.dataset.step}`;
  });
  stream.on("watch", (msg) => {
    if (!isTempo(msg)) return;
    watchSeen++;
    const obj = typeof msg.object === "string" ? JSON.parse(msg.object) : msg.object;
    render(panel, msg.eventType === "DELETED" ? fromData({}) : fromData(obj?.data));
  });
  render(panel, {
    mode: panel.dataset.mode,
    released: Number(panel.dataset.released),
    taken: Number(panel.dataset.taken),
    lastStep: (byTestId("tempo-last", panel).textContent || "").trim().replace(/^last: /, ""),
    waiting: [...panel.querySelectorAll('[data-testid="tempo-waiting-item"]')].map((li) => li.textContent),
  });
}
