// etcd explorer: keys that change light up, new keys are listed on top, and
// the selected key's value follows its changes.
import { el, byData, flash } from "./dom.js";

const CHANGES = 20;

// filterKeys shows the keys whose path contains the filter's text, opens
// the groups and namespaces that hold one and hides the rest; an empty
// filter gives back the tree as it opened.
function filterKeys(tree, text) {
  const q = text.trim().toLowerCase();
  let shown = 0;
  for (const details of tree.querySelectorAll("details.key-group, details.key-ns-group")) {
    if (details.dataset.opened === undefined) details.dataset.opened = String(details.open);
  }
  for (const link of tree.querySelectorAll('[data-testid="etcd-key"]')) {
    const match = !q || link.dataset.key.toLowerCase().includes(q);
    link.parentElement.hidden = !match;
    if (match) shown++;
  }
  for (const details of [...tree.querySelectorAll("details.key-ns-group"), ...tree.querySelectorAll("details.key-group")]) {
    const any = details.querySelector("li:not([hidden])") !== null;
    details.hidden = !any;
    details.open = q ? any : details.dataset.opened === "true";
  }
  document.getElementById("key-filter-none").hidden = shown > 0;
}

export function etcdPage(stream) {
  const tree = document.querySelector('[data-testid="etcd-tree"]');
  const filter = document.getElementById("key-filter");
  if (tree && filter) filter.addEventListener("input", () => filterKeys(tree, filter.value));
  const params = new URLSearchParams(location.search);
  const selected = params.get("key");
  // A past revision stays as it was; only the newest value follows changes.
  const live = !params.get("rev") && !params.get("at");
  const slider = document.getElementById("at-slider");
  const output = document.getElementById("at-output");
  if (slider && output) {
    slider.addEventListener("input", () => { output.textContent = slider.value; });
    slider.addEventListener("change", () => slider.form.submit());
  }
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
      if (slider && Number(slider.max) < m.revision) slider.max = String(m.revision);
      if (live && m.key === selected) {
        const mod = document.querySelector('[data-testid="etcd-mod-revision"]');
        if (mod) mod.textContent = String(m.revision);
      }
    })
    .on("watch", (m) => {
      if (!live || m.key !== selected || !m.object) return;
      const pre = document.querySelector('[data-testid="etcd-json"]');
      if (pre) {
        pre.textContent = m.eventType === "DELETED" ? `(deleted at revision ${m.revision})` : JSON.stringify(m.object, null, 2);
        flash(pre);
      }
    });
}
