// Service page: the Service's panel (its spec, EndpointSlices, DNS names
// and the proxy's rules per node) is read again from the server
// (?part=service, rendered and escaped there) when the Service, one of its
// EndpointSlices or an Event about it (the proxy's EndpointsProgrammed)
// changes, and every few seconds while a node's rules are not available;
// what changed flashes.
import { flash } from "./dom.js";
import { applyLang } from "./i18n.js";

const SERVICE_NAME_LABEL = "kubernetes.io/service-name";
const RELOAD_MS = 250;
// While a node's rules are not available (its proxy not started or not
// synced yet), the panel is read again every RETRY_MS: no change to the
// Service says when they become available. A page retries at most
// MAX_RETRIES times (a user RBAC keeps from nodes/proxy never gets them).
const RETRY_MS = 3000;
const MAX_RETRIES = 40;

// rowKey names a panel row so the old and the new panel can be compared.
function rowKey(n) {
  const d = n.dataset;
  return `${d.testid}|${d.key || d.name || d.node || ""}`;
}

function rows(panel) {
  const out = new Map();
  for (const n of panel.querySelectorAll('[data-testid="endpoint"],[data-testid="dns-name"],[data-testid="rules"],[data-testid="rules-unavailable"],[data-testid="service-port"],[data-testid="service-cluster-ips"],[data-testid="service-selector"]')) {
    const key = n.dataset.testid === "rules" || n.dataset.testid === "rules-unavailable" ? `${n.dataset.testid}|${n.closest("[data-node]")?.dataset.node}` : rowKey(n);
    out.set(key, n);
  }
  return out;
}

// reload fetches the panel and swaps it in, flashing the rows that are new
// or whose text or state changed.
async function reload(panel) {
  const resp = await fetch(`${location.pathname}?part=service`, { headers: { Accept: "text/html" } });
  if (!resp.ok) return panel;
  const doc = new DOMParser().parseFromString(await resp.text(), "text/html");
  const fresh = doc.getElementById("service-panel");
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

export function servicePage(stream) {
  let panel = document.getElementById("service-panel");
  const section = document.querySelector('[data-testid="object"]');
  if (!panel || !section || section.dataset.past === "true") return;
  const { namespace, name, key } = section.dataset;
  let timer = 0;
  let running = false;
  let again = false;
  let retry = 0;
  let retries = 0;
  // retryUnavailable reads the panel again later while rules are missing.
  const retryUnavailable = () => {
    clearTimeout(retry);
    if (retries < MAX_RETRIES && panel.querySelector('[data-testid="rules-unavailable"]')) {
      retries++;
      retry = setTimeout(() => soon(), RETRY_MS);
    }
  };
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
        } else {
          retryUnavailable();
        }
      }
    }, RELOAD_MS);
  };
  retryUnavailable();
  const mine = (m) => (m.namespace || "") === namespace;
  stream
    .on("watch", (m) => {
      if (m.key === key) soon();
      else if (m.kind === "EndpointSlice" && mine(m) &&
        (m.object?.metadata?.labels?.[SERVICE_NAME_LABEL] === name || (!m.object && m.name?.startsWith(`${name}-`)))) soon();
    })
    .on("event", (m) => {
      if (m.kind === "Service" && m.name === name && mine(m)) soon();
    });
}
