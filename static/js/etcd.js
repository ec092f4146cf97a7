// etcd explorer: keys that change light up, new keys are listed on top, and
// the selected key's value follows its changes.
import { el, byData, flash } from "./dom.js";

const CHANGES = 20;

export function etcdPage(stream) {
  const selected = new URLSearchParams(location.search).get("key");
  const changes = document.getElementById("etcd-changes");
  stream
    .on("etcd", (m) => {
      const link = byData('[data-testid="etcd-key"]', "key", m.key);
      if (link) {
        link.dataset.modRevision = String(m.revision);
        link.classList.toggle("deleted", m.eventType === "DELETE");
        flash(link);
      }
      const item = el("li", { class: `change change-${m.eventType.toLowerCase()}`, "data-testid": "etcd-change", "data-key": m.key },
        el("span", { class: "change-type" }, m.created ? "CREATE" : m.eventType),
        el("a", { href: `/etcd?key=${encodeURIComponent(m.key)}` }, m.key),
        el("span", { class: "change-rev" }, `rev ${m.revision}`));
      changes.prepend(item);
      flash(item);
      while (changes.children.length > CHANGES) changes.lastElementChild.remove();
      if (m.key === selected) {
        const mod = document.querySelector('[data-testid="etcd-mod-revision"]');
        if (mod) mod.textContent = String(m.revision);
      }
    })
    .on("watch", (m) => {
      if (m.key !== selected || !m.object) return;
      const pre = document.querySelector('[data-testid="etcd-json"]');
      if (pre) {
        pre.textContent = m.eventType === "DELETED" ? `(deleted at revision ${m.revision})` : JSON.stringify(m.object, null, 2);
        flash(pre);
      }
    });
}
