// PersistentVolumeClaim, CronJob and HorizontalPodAutoscaler pages: the
// object's own part (#workload-panel, ?part=<its data-part>, rendered and
// escaped by the server) is read again when the object changes, when an
// object it leads to does (a claim's volume and the pods of its namespace
// that mount it, a CronJob's Jobs), or when an Event about it is written
// (an HPA's SuccessfulRescale); rows that are new or changed flash.
import { flash } from "./dom.js";
import { applyLang } from "./i18n.js";

const RELOAD_MS = 250;

// rowKey names a panel row so the old and the new panel can be compared.
function rowKey(n) {
  const d = n.dataset;
  return `${d.testid}|${d.name || d.type || ""}`;
}

function rows(panel) {
  const out = new Map();
  for (const n of panel.querySelectorAll("tr[data-testid], li[data-testid], dd[data-testid]")) out.set(rowKey(n), n);
  return out;
}

async function reload(panel) {
  const part = panel.dataset.part;
  const resp = await fetch(`${location.pathname}?part=${encodeURIComponent(part)}`, { headers: { Accept: "text/html" } });
  if (!resp.ok) return panel;
  const doc = new DOMParser().parseFromString(await resp.text(), "text/html");
  const fresh = doc.getElementById("workload-panel");
  if (!fresh) return panel;
  const next = document.importNode(fresh, true);
  const before = rows(panel);
  panel.replaceWith(next);
  applyLang(undefined, next);
  for (const [key, n] of rows(next)) {
    const old = before.get(key);
    if (!old || old.textContent !== n.textContent || JSON.stringify(old.dataset) !== JSON.stringify(n.dataset)) flash(n);
  }
  next.dataset.reloads = String(Number(panel.dataset.reloads || 0) + 1);
  return next;
}

// concerns says whether a watch message is about something the part shows.
function concerns(part, section, m) {
  const { namespace, name, key, uid } = section.dataset;
  if (m.key === key) return true;
  const mine = (m.namespace || "") === namespace;
  const obj = m.object;
  switch (part) {
    case "pvc":
      if (m.kind === "PersistentVolume") return !obj || obj.spec?.claimRef?.name === name;
      if (m.kind === "Pod" && mine) return !obj || (obj.spec?.volumes || []).some((v) => v.persistentVolumeClaim?.claimName === name);
      return false;
    case "cronjob":
      return m.kind === "Job" && mine && (!obj || (obj.metadata?.ownerReferences || []).some((r) => r.uid === uid));
  }
  return false;
}

export function workloadPage(stream) {
  let panel = document.getElementById("workload-panel");
  const section = document.querySelector('[data-testid="object"]');
  if (!panel || !section || section.dataset.past === "true") return;
  const part = panel.dataset.part;
  const { namespace, name, kind } = section.dataset;
  let timer = 0;
  let running = false;
  let again = false;
  const soon = () => {
    if (timer) return;
    timer = setTimeout(async () => {
      timer = 0;
      if (running) {
        again = true;
        return;
      }
      running = true;
      try {
        panel = await reload(panel);
      } finally {
        running = false;
        if (again) {
          again = false;
          soon();
        }
      }
    }, RELOAD_MS);
  };
  stream
    .on("watch", (m) => {
      if (concerns(part, section, m)) soon();
    })
    .on("event", (m) => {
      if (m.kind === kind && m.name === name && (m.namespace || "") === namespace) soon();
    });
}
