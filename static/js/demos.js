// The Demos page: Run starts a demo on the server (as the viewer) and the
// page follows its narrated steps until it is done.
import { el, byTestId } from "./dom.js";

function renderRun(run) {
  const steps = el("ol", { class: "demo-steps" });
  for (const l of run.lines || []) {
    steps.append(
      el(
        "li",
        { "data-testid": "demo-step", "data-step": l.step },
        el("p", { class: "demo-narration" }, l.narration),
        l.result ? el("p", { class: "demo-result" }, `→ ${l.result}`) : null,
        l.error ? el("p", { class: "error" }, `✗ ${l.error}`) : null,
      ),
    );
  }
  return el(
    "div",
    { class: "demo-run", "data-testid": "demo-run", "data-run": run.id, "data-done": String(run.done) },
    el("h3", {}, el("code", {}, run.name), " ", el("span", { class: "demo-by" }, `as ${run.by}`)),
    steps,
    run.error ? el("p", { class: "error", "data-testid": "demo-run-error" }, run.error) : null,
  );
}

async function follow(id) {
  const runs = document.getElementById("demo-runs");
  for (;;) {
    const res = await fetch(`/demos/runs/${encodeURIComponent(id)}`, { headers: { Accept: "application/json" } });
    if (!res.ok) return;
    const run = await res.json();
    const node = renderRun(run);
    const old = runs.querySelector(`[data-run="${CSS.escape(id)}"]`);
    if (old) old.replaceWith(node);
    else runs.prepend(node);
    if (run.done) return;
    await new Promise((r) => setTimeout(r, 700));
  }
}

export function demosPage() {
  const error = byTestId("demo-error");
  for (const form of document.querySelectorAll(".demo-run-form")) {
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      error.hidden = true;
      const res = await fetch(form.action, {
        method: "POST",
        body: new URLSearchParams(new FormData(form)),
        headers: { Accept: "application/json" },
      });
      const body = await res.json().catch(() => ({}));
      if (!res.ok) {
        error.textContent = body.message || `${res.status} ${res.statusText}`;
        error.hidden = false;
        return;
      }
      follow(body.id);
    });
  }
  for (const run of document.querySelectorAll('[data-testid="demo-run"][data-done="false"]')) follow(run.dataset.run);
}
