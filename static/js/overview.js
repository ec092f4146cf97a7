// Overview: node boxes with their pod chips, and the feed of recent steps.
import { el, byTestId, byData, clock, flash, stageChips, safeHref } from "./dom.js";
import { clusterMap } from "./map.js";

const FEED_LENGTH = 40;
const MUTATING = new Set(["create", "update", "patch", "delete", "deletecollection"]);

function readyText(status) {
  if (status === "True") return "Ready";
  if (status === "False") return "NotReady";
  return "Unknown";
}

function nodeBox(name, ready, href) {
  return el("div", { class: "node", "data-testid": `node-${name}`, "data-node": name, "data-ready": ready },
    el("div", { class: "node-head" },
      el("a", { class: "node-name", href: safeHref(href) }, name),
      el("span", { class: "node-ready", "data-testid": "node-ready" }, readyText(ready))),
    el("div", { class: "pods", "data-pods-of": name }));
}

function podChip(m) {
  return el("a", {
    class: "pod", href: safeHref(m.href), "data-testid": `pod-${m.namespace}-${m.name}`,
    "data-namespace": m.namespace, "data-name": m.name,
  },
  el("span", { class: "pod-dot", "aria-hidden": "true" }),
  el("span", { class: "pod-name" }, m.name),
  el("span", { class: "pod-phase" }));
}

function podsContainer(nodeName) {
  if (nodeName) {
    const box = byData(".pods", "podsOf", nodeName);
    if (box) return box;
  }
  return document.getElementById("unscheduled");
}

function upsertPod(m) {
  const id = `pod-${m.namespace}-${m.name}`;
  let chip = byTestId(id);
  if (m.eventType === "DELETED") {
    if (chip) chip.remove();
    return;
  }
  if (!chip) chip = podChip(m);
  chip.dataset.phase = m.phase || "Pending";
  chip.dataset.node = m.nodeName || "";
  chip.title = `${m.namespace}/${m.name}: ${chip.dataset.phase}`;
  chip.querySelector(".pod-phase").textContent = chip.dataset.phase;
  const parent = podsContainer(m.nodeName);
  if (chip.parentElement !== parent) parent.append(chip);
  flash(chip);
}

function upsertNode(m) {
  let box = byTestId(`node-${m.name}`);
  if (m.eventType === "DELETED") {
    if (!box) return;
    for (const chip of box.querySelectorAll(".pod")) document.getElementById("unscheduled").append(chip);
    box.remove();
    return;
  }
  if (!box) {
    box = nodeBox(m.name, m.ready, m.href);
    document.getElementById("nodes").append(box);
    document.getElementById("no-nodes")?.remove();
    for (const chip of [...document.querySelectorAll("#unscheduled .pod")]) {
      if (chip.dataset.node === m.name) box.querySelector(".pods").append(chip);
    }
  }
  box.dataset.ready = m.ready || "Unknown";
  box.querySelector(".node-ready").textContent = readyText(m.ready);
  flash(box);
}

function target(m) {
  return [m.resource || m.kind, m.namespace, m.name].filter(Boolean).join("/");
}

function addFeed(m, source) {
  const feed = document.getElementById("feed");
  const href = safeHref(m.href);
  const item = el("li", {
    class: `feed-item src-${source}${m.failed ? " failed" : ""}`, "data-testid": "feed-item", "data-source": source,
  },
  el("time", { datetime: m.timestamp }, clock(m.timestamp)),
  el("span", { class: "actor" }, m.component),
  el("span", { class: "action" }, m.action),
  href ? el("a", { class: "target", href }, target(m)) : el("span", { class: "target" }, target(m)));
  if (m.stages?.length) item.append(stageChips(m.stages));
  const message = source === "event" || m.failed ? m.message : "";
  if (message) item.append(el("span", { class: "msg" }, message));
  feed.prepend(item);
  flash(item);
  while (feed.children.length > FEED_LENGTH) feed.lastElementChild.remove();
}

export function overview(stream) {
  clusterMap(stream);
  stream
    .on("watch", (m) => {
      if (m.kind === "Pod") upsertPod(m);
      else if (m.kind === "Node") upsertNode(m);
    })
    .on("audit", (m) => {
      if (MUTATING.has(m.verb)) addFeed(m, "audit");
    })
    .on("event", (m) => addFeed(m, "event"));
}
