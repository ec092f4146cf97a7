// The Demos page: Run starts a demo on the server (as the viewer) and the
// page follows its narrated steps until it is done. The demos speak the
// language chosen in the header: the page is rendered in the language of
// its ?lang=, so it asks for the chosen one when they differ (and a link
// with ?lang= chooses that language).
import { el, byTestId } from "./dom.js";
import { applyLang, chooseLang } from "./i18n.js";
import { currentLang } from "./narration.js";

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
    el("h3", {}, el("code", {}, run.name), " ", el("span", { class: "demo-by", "data-i18n": "demos.by", "data-by": run.by }, `as ${run.by}`)),
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
    applyLang(undefined, node);
    const old = runs.querySelector(`[data-run="${CSS.escape(id)}"]`);
    if (old) old.replaceWith(node);
    else runs.prepend(node);
    if (run.done) return;
    await new Promise((r) => setTimeout(r, 700));
  }
}

// speakChosenLang shows the demos in the chosen language, now and after
// a switch.
function speakChosenLang() {
  const rendered = document.querySelector("[data-lang].lead")?.dataset.lang || "en";
  const asked = new URLSearchParams(location.search).get("lang");
  const show = (lang) => {
    if (lang === rendered) return;
    const url = new URL(location.href);
    url.searchParams.set("lang", lang);
    location.replace(url);
  };
  if (asked && asked !== currentLang()) chooseLang(asked);
  else show(currentLang());
  document.addEventListener("glassplane:lang", (ev) => show(ev.detail.lang));
}

export function demosPage() {
  speakChosenLang();
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
