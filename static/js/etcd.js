// etcd explorer: keys that change light up, new keys are listed on top, and
// the selected key's value follows its changes.
import { el, byData, flash } from "./dom.js";

const CHANGES = 20;

export function etcdPage(stream) {
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
