// Object page: the timeline grows as requests and Events about the object
// arrive, and the stored object refreshes when its key changes. The page
// follows one object by uid: a step naming another object of the same name
// (deleted and created again) is not its own, and a page of an earlier
// one (?uid=) takes only steps naming it. A repeated read (the same user,
// verb and answer) counts on its row instead of adding one.
import { el, clock, flash, stageChips } from "./dom.js";
import { applyLang } from "./i18n.js";

const READS = new Set(["get", "list", "watch"]);

function relabel(tbody) {
  const rows = [...tbody.querySelectorAll("tr")];
  if (!rows.length) return;
  const first = Date.parse(rows[0].dataset.time);
  for (const row of rows) {
    const rel = row.querySelector(".rel");
    if (rel) rel.textContent = `+${Math.max(0, Date.parse(row.dataset.time) - first)} ms`;
  }
}

// countRead adds a read to its folded row, if the timeline has one.
function countRead(tbody, key, m) {
  const row = [...tbody.querySelectorAll("tr[data-fold-key]")].find((r) => r.dataset.foldKey === key);
  if (!row) return false;
  const count = Number(row.dataset.count || 1) + 1;
  row.dataset.count = String(count);
  const action = row.querySelector(".action");
  let badge = action.querySelector(".read-count");
  if (!badge) {
    badge = el("span", { class: "read-count", "data-testid": "read-count" });
    action.append(badge);
  }
  badge.textContent = `×${count}`;
  badge.title = `the same read, ${count} times; the last at ${clock(m.timestamp)}`;
  flash(row);
  return true;
}

function addRow(tbody, source, m) {
  const foldKey = source === "audit" && READS.has(m.verb) ? `${m.component} ${m.action} ${m.code || 0}` : "";
  if (foldKey && countRead(tbody, foldKey, m)) return;
  const action = el("td", { class: "action" }, m.action);
  if (m.code) action.append(el("span", { class: "code-badge" }, String(m.code)));
  if (source === "event" && m.eventType === "Warning") action.append(el("span", { class: "warn-badge" }, "Warning"));
  const detail = el("td", { class: "detail" });
  if (m.stages?.length) detail.append(stageChips(m.stages));
  if (m.message) detail.append(el("span", { class: "msg" }, m.message));
  if (source === "audit") {
    const links = el("span", { class: "row-links" }, el("a", { href: `/requests?reads=1#req-${m.seq}`, "data-testid": "row-audit-link", "data-i18n": "object.audit-link" }, "audit event"));
    if (m.key && m.revision) {
      links.append(el("a", { href: `/etcd?key=${encodeURIComponent(m.key)}&rev=${m.revision}`, "data-testid": "row-etcd-link" }, `etcd rev ${m.revision} · diff`));
    }
    detail.append(links);
  }
  const failed = m.failed || (source === "event" && m.eventType === "Warning");
  const row = el("tr", {
    class: `row src-${source}${failed ? " failed" : ""}`, "data-testid": "timeline-row", "data-source": source, "data-time": m.timestamp,
    "data-uid": m.uid || "", "data-fold-key": foldKey, "data-count": foldKey ? "1" : "0",
  },
  el("td", { class: "time" }, el("time", { datetime: m.timestamp }, clock(m.timestamp))),
  el("td", { class: "rel" }),
  el("td", {}, source === "audit" ? el("span", { class: `src src-${source}`, "data-i18n": "object.src.audit" }, "API request") : el("span", { class: `src src-${source}` }, "Event")),
  el("td", { class: "actor" }, m.component),
  action,
  detail);
  applyLang(undefined, row);
  const after = [...tbody.querySelectorAll("tr")].find((r) => r.dataset.time > m.timestamp);
  tbody.insertBefore(row, after || null);
  relabel(tbody);
  flash(row);
}

async function refreshStored(section, m) {
  const pre = document.getElementById("object-yaml");
  const rv = document.getElementById("object-rv");
  if (rv) rv.textContent = String(m.revision);
  if (m.eventType === "DELETED") {
    pre.textContent = `(deleted at revision ${m.revision})`;
    return;
  }
  if (!section.dataset.uid && m.uid) section.dataset.uid = m.uid;
  // A pod just bound: the page reloads, once per pod, to show the
  // scheduler's decision (read from its SchedulingDecision).
  const once = `decision-reload:${m.uid || section.dataset.uid}`;
  if (m.object?.kind === "Pod" && m.object?.spec?.nodeName && !sessionStorage.getItem(once) &&
      !document.querySelector('[data-testid="decision"],[data-testid="decision-error"]')) {
    sessionStorage.setItem(once, "1");
    location.reload();
    return;
  }
  const resp = await fetch(`${location.pathname}?format=yaml`, { headers: { Accept: "application/yaml" } });
  if (resp.ok) {
    pre.textContent = await resp.text();
    flash(pre);
  }
}

export function objectPage(stream) {
  const section = document.querySelector('[data-testid="object"]');
  const tbody = document.getElementById("timeline-rows");
  if (!section || !tbody) return;
  const o = section.dataset;
  const past = o.past === "true";
  const isIt = (m) => (m.namespace || "") === (o.namespace || "");
  // sameObject: a step naming a uid must name this one's; an earlier
  // object's page takes only those.
  const sameObject = (m) => (m.uid ? !o.uid || m.uid === o.uid : !past);
  stream
    .on("audit", (m) => {
      if (!sameObject(m)) return;
      if (m.key === o.key || (m.resource === o.resource && m.name === o.name && isIt(m))) addRow(tbody, "audit", m);
    })
    .on("event", (m) => {
      if (!sameObject(m)) return;
      if ((o.uid && m.uid === o.uid) || (m.kind === o.kind && m.name === o.name && isIt(m))) addRow(tbody, "event", m);
    })
    .on("watch", (m) => {
      if (past || m.key !== o.key) return;
      if (o.uid && m.uid && m.uid !== o.uid && m.eventType !== "DELETED") return;
      refreshStored(section, m);
    });
}
