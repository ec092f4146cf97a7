// Request pipeline page: every audit event the page's filter keeps is
// prepended as it arrives, its stages lighting up one after the other and
// stopping red at the one that refused it.
import { el, clock, safeHref, stageStart } from "./dom.js";
import { applyLang } from "./i18n.js";

const MUTATING = new Set(["create", "update", "patch", "delete", "deletecollection"]);
const LENGTH = 100;
const TITLES = {
  authentication: "authentication", authorization: "authorization (RBAC)", decoding: "decoding",
  admission: "admission (validation)", etcd: "storage (etcd)",
};

// detail says what a stage found; the stage that stopped the request says
// why, in a few words (the server's stage detail: "not found").
function detail(m, s) {
  const r = m.request || {};
  if (r.failedStage === s.name) return s.detail || "refused";
  switch (s.name) {
    case "authentication":
      return r.authenticator || "ok";
    case "authorization":
      return r.decision || "";
    case "admission":
      return r.admission?.length ? `${r.admission.length} plugin notes` : "";
    case "etcd":
      return m.revision ? `rev ${m.revision}` : "";
  }
  return "";
}

function target(m) {
  return [m.resource || m.kind, m.namespace, m.name].filter(Boolean).join("/");
}

// admissionCalls lists the webhook calls and policy evaluations of a
// request's admission, as components.AdmissionCalls does.
function admissionCalls(r) {
  const wrap = el("div", { class: "admission-calls", "data-testid": "admission-calls" });
  if (r.callsNote) wrap.append(el("p", { class: "note", "data-testid": "admission-calls-note" }, r.callsNote));
  const ol = el("ol");
  for (const c of r.calls || []) {
    const li = el("li", { class: `admission-call call-${c.result}`, "data-testid": "admission-call", "data-kind": c.kind, "data-result": c.result },
      el("span", { class: "label" }, c.kind), " ",
      el("code", { "data-testid": "admission-call-name" }, `${c.configuration} / ${c.name}`), " ",
      el("span", { class: "call-duration" }, c.duration), " ",
      el("span", { class: `call-result result-${c.result}`, "data-testid": "admission-call-result" }, c.result));
    if (c.message) li.append(" ", el("span", { class: "call-message", "data-testid": "admission-call-message" }, c.message));
    if (c.patch) li.append(el("details", { class: "call-patch" }, el("summary", { "data-i18n": "requests.patch" }, "patch"), el("pre", { "data-testid": "admission-call-patch" }, c.patch)));
    ol.append(li);
  }
  wrap.append(ol);
  return wrap;
}

function row(m) {
  const r = m.request || {};
  const href = safeHref(m.href);
  const head = el("div", { class: "request-head" },
    el("time", { datetime: m.timestamp }, clock(m.timestamp)),
    el("span", { class: "actor", title: (r.groups || []).join(", ") }, m.component),
    el("span", { class: "action" }, m.action),
    href ? el("a", { class: "target", href }, target(m)) : el("span", { class: "target" }, target(m)));
  if (m.code) head.append(el("span", { class: `code-badge${m.failed ? " bad" : ""}`, "data-testid": "request-code" }, String(m.code)));
  const pipeline = el("div", { class: "pipeline", "data-testid": "pipeline" });
  (m.stages || []).forEach((s, i) => {
    // The entrance is staggered by class: the Content-Security-Policy
    // refuses inline style attributes.
    if (i > 0) pipeline.append(el("span", { class: `pipe pipe-${s.state} stage-delay-${i}`, "aria-hidden": "true" }));
    const stage = el("span", { class: `pstage stage-${s.state} stage-delay-${i}`, "data-stage": s.name, "data-state": s.state },
      el("span", { class: "pstage-name", "data-i18n": `stage.${s.name}` }, TITLES[s.name] || s.name),
      el("span", { class: "pstage-detail" }, detail(m, s)));
    const start = stageStart(s);
    if (start) stage.append(el("span", { class: "pstage-time", title: "when the request entered this stage, after it arrived", "data-i18n-title": "stage.time" }, start));
    pipeline.append(stage);
  });
  const item = el("li", {
    class: `request fresh${m.failed ? " failed" : ""}`, "data-testid": "request", id: `req-${m.seq}`, "data-seq": m.seq, "data-verb": m.verb,
    "data-code": m.code || 0, "data-failed-stage": r.failedStage || "",
  }, head, pipeline);
  if (r.calls?.length || r.callsNote) item.append(admissionCalls(r));
  if (m.failed && r.status) item.append(el("p", { class: "request-reason", "data-testid": "request-reason" }, r.status));
  if (r.reason) item.append(el("p", { class: "request-rbac", "data-testid": "request-rbac" }, el("span", { class: "label" }, "RBAC:"), ` ${r.reason}`));
  if (r.admission?.length) {
    const ul = el("ul");
    for (const a of r.admission) ul.append(el("li", {}, el("span", { class: "label" }, a.plugin), " ", el("code", {}, a.result)));
    item.append(el("details", { class: "admission-notes" }, el("summary", { "data-i18n": "requests.admission-notes", "data-count": r.admission.length }, `admission: ${r.admission.length} plugin notes`), ul));
  }
  if (m.key) {
    const keyHref = `/etcd?key=${encodeURIComponent(m.key)}${m.revision ? `&rev=${m.revision}` : ""}`;
    item.append(el("p", { class: "request-etcd" }, el("span", { class: "label" }, "etcd:"), " ",
      el("a", { href: keyHref, "data-testid": "request-key" }, `${m.key} @${m.revision || 0}`)));
  }
  return item;
}

export function requestsPage(stream) {
  const list = document.getElementById("request-list");
  if (!list) return;
  const q = new URLSearchParams(location.search);
  const reads = q.get("reads") === "1", onlyFailed = q.get("failed") === "1", user = q.get("user") || "";
  stream.on("audit", (m) => {
    if (user && !(m.component || "").includes(user)) return;
    if (onlyFailed && !m.failed) return;
    if (!reads && !m.failed && !MUTATING.has(m.verb)) return;
    document.getElementById("no-requests")?.remove();
    const item = row(m);
    applyLang(undefined, item);
    list.prepend(item);
    while (list.children.length > LENGTH) list.lastElementChild.remove();
  });
}
