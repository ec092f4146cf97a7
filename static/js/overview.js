// Overview: node boxes with their pod chips, and the feed of recent steps.
//
// A chip changes as soon as its watch event arrives (chips and node boxes
// are found through maps, not by querying a page of a thousand chips); the
// browser draws all of a frame's changes at once. Feed items are gathered
// and added at most every PANEL_MS, only the newest FEED_BURST of them: a
// busy cluster's feed shows a sample of its steps, a few insertions a
// second, not one per request (laying out feed items is the page's
// costliest work).
//
// The page's regions are contained (app.css, contain: content): a change inside
// one node box, the feed, the step list or the map lays out and repaints
// that region, not a page of a thousand chips.
//
// Background steps (the server marks them: lease renewals, node
// heartbeats, Event writes, permission checks) stay out of the map, its
// narration and the feed; the feed's quiet line counts them, and
// ?background=1 lists them. Above the narration, the latest step a person
// caused stays named while the cluster's steps that follow it are narrated.
import { el, clock, flash, stageChips, safeHref, pacer } from "./dom.js";
import { clusterMap } from "./map.js";
import { currentLang, causeText, isPerson } from "./narration.js";
import { setText } from "./i18n.js";

const FEED_LENGTH = 40;
const PANEL_MS = 250;
const FEED_BURST = 4;
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

// setClaims shows the PersistentVolumeClaims a pod mounts, before its phase.
function setClaims(chip, claims) {
  const text = (claims || []).join(", ");
  if ((chip.dataset.claims || "") === (claims || []).join(" ")) return;
  let span = chip.querySelector(".pod-claims");
  if (!text) {
    span?.remove();
    delete chip.dataset.claims;
    return;
  }
  if (!span) {
    span = el("span", { class: "pod-claims", "data-testid": "pod-claims", title: "PersistentVolumeClaim" });
    chip.insertBefore(span, chip.lastElementChild);
  }
  span.textContent = text;
  chip.dataset.claims = claims.join(" ");
}

// ordinalOf splits "db-12" into ["db", 12]; null for a name without one.
function ordinalOf(name) {
  const m = /^(.*)-(\d+)$/.exec(name || "");
  return m ? [m[1], Number(m[2])] : null;
}

// placeChip appends a chip to its node's pods, or, for a pod named
// <prefix>-<ordinal> (a StatefulSet's), before the first of the same
// namespace and prefix with a greater ordinal, as the server orders them.
function placeChip(parent, chip) {
  const mine = ordinalOf(chip.dataset.name);
  if (mine) {
    for (const other of parent.children) {
      if (other === chip || other.dataset.namespace !== chip.dataset.namespace) continue;
      const o = ordinalOf(other.dataset.name);
      if (o && o[0] === mine[0] && o[1] > mine[1]) {
        parent.insertBefore(chip, other);
        return;
      }
    }
  }
  parent.append(chip);
}

function target(m) {
  return [m.resource || m.kind, m.namespace, m.name].filter(Boolean).join("/");
}

function feedItem(m, source) {
  const href = safeHref(m.href);
  const item = el("li", {
    class: `feed-item src-${source}${m.failed ? " failed" : ""}${m.background ? " background" : ""}`,
    "data-testid": "feed-item", "data-source": source, "data-background": m.background || "",
  },
  el("time", { datetime: m.timestamp }, clock(m.timestamp)),
  el("span", { class: "actor" }, m.component),
  el("span", { class: "action" }, m.action),
  href ? el("a", { class: "target", href }, target(m)) : el("span", { class: "target" }, target(m)));
  if (m.stages?.length) item.append(stageChips(m.stages));
  const message = source === "event" || m.failed ? m.message : "";
  if (message) item.append(el("span", { class: "msg" }, message));
  return item;
}

class Overview {
  constructor() {
    this.nodesEl = document.getElementById("nodes");
    this.unscheduled = document.getElementById("unscheduled");
    this.feed = document.getElementById("feed");
    this.chips = new Map(); // ns/name -> chip
    this.boxes = new Map(); // node name -> node box
    for (const chip of document.querySelectorAll(".pods .pod[data-name]")) this.chips.set(`${chip.dataset.namespace}/${chip.dataset.name}`, chip);
    for (const box of this.nodesEl?.querySelectorAll(".node[data-node]") || []) this.boxes.set(box.dataset.node, box);
    this.pendingFeed = []; // [message, source], oldest first
    this.feedArrived = 0; // steps queued since the last flush, kept or not
    this.flushFeedSoon = pacer(() => this.flushFeed(), PANEL_MS);
  }

  podsContainer(nodeName) {
    return this.boxes.get(nodeName)?.querySelector(".pods") || this.unscheduled;
  }

  upsertPod(m) {
    const key = `${m.namespace}/${m.name}`;
    let chip = this.chips.get(key);
    if (m.eventType === "DELETED") {
      chip?.remove();
      this.chips.delete(key);
      return;
    }
    if (!chip) {
      chip = podChip(m);
      this.chips.set(key, chip);
    }
    // Only what changed is written: a text written again is laid out again.
    const phase = m.phase || "Pending";
    if (chip.dataset.phase !== phase) {
      chip.dataset.phase = phase;
      chip.title = `${m.namespace}/${m.name}: ${phase}`;
      chip.lastElementChild.textContent = phase;
    }
    if (chip.dataset.node !== (m.nodeName || "")) chip.dataset.node = m.nodeName || "";
    setClaims(chip, m.claims);
    const parent = this.podsContainer(m.nodeName);
    if (chip.parentElement !== parent) placeChip(parent, chip);
    flash(chip);
  }

  upsertNode(m) {
    let box = this.boxes.get(m.name);
    if (m.eventType === "DELETED") {
      if (!box) return;
      for (const chip of box.querySelectorAll(".pod")) this.unscheduled.append(chip);
      box.remove();
      this.boxes.delete(m.name);
      return;
    }
    if (!box) {
      box = nodeBox(m.name, m.ready, m.href);
      this.nodesEl.append(box);
      this.boxes.set(m.name, box);
      document.getElementById("no-nodes")?.remove();
      for (const chip of [...this.unscheduled.querySelectorAll(".pod")]) {
        if (chip.dataset.node === m.name) box.querySelector(".pods").append(chip);
      }
    }
    const ready = m.ready || "Unknown";
    if (box.dataset.ready === ready) return;
    box.dataset.ready = ready;
    box.querySelector(".node-ready").textContent = readyText(m.ready);
    flash(box);
  }

  // addFeed queues a step for the feed; the next flush adds the newest
  // ones, keeping a person's steps over the cluster's (the scheduler's,
  // the kubelet's and their Events follow an apply within milliseconds).
  addFeed(m, source) {
    this.pendingFeed.push([m, source]);
    this.feedArrived++;
    if (this.pendingFeed.length > FEED_BURST) {
      const i = this.pendingFeed.findIndex(([p, src]) => src !== "audit" || !isPerson(p.component));
      this.pendingFeed.splice(i >= 0 ? i : 0, 1);
    }
    this.flushFeedSoon();
  }

  flushFeed() {
    const items = this.pendingFeed.map(([m, source]) => feedItem(m, source)).reverse();
    const burst = this.feedArrived > FEED_BURST;
    this.pendingFeed = [];
    this.feedArrived = 0;
    this.feed.prepend(...items);
    while (this.feed.children.length > FEED_LENGTH) this.feed.lastElementChild.remove();
    // In a burst the whole feed turns over within seconds: a highlight
    // would mark every item, so none is marked.
    if (!burst) for (const item of items) flash(item);
  }
}

// foreground is the stream as the map sees it: without background steps.
function foreground(stream) {
  return {
    on(type, fn) {
      stream.on(type, type === "audit" || type === "event" ? (m) => { if (!m.background) fn(m); } : fn);
      return this;
    },
  };
}

// Story keeps the narration's cause line (the latest step a person caused)
// and the feed's background line, in the chosen language.
class Story {
  constructor() {
    this.cause = document.getElementById("narration-cause");
    this.line = document.getElementById("feed-background");
    this.shown = this.line?.dataset.shown === "true";
    this.count = Number(this.line?.dataset.count || 0);
    this.last = null; // the latest audit message of a person's change
    // In a burst the cause and the count are redrawn at most every
    // PANEL_MS, with the newest of them, not once per step.
    this.causeSoon = pacer(() => this.renderCause(), PANEL_MS);
    this.lineSoon = pacer(() => this.renderLine(), PANEL_MS);
    this.lang = currentLang();
    document.addEventListener("glassplane:lang", (ev) => {
      this.lang = ev.detail.lang;
      this.render();
    });
    this.render();
  }

  caused(m) {
    this.last = m;
    this.causeSoon();
  }

  background(n = 1) {
    this.count += n;
    this.lineSoon();
  }

  render() {
    this.renderCause();
    this.renderLine();
  }

  renderCause() {
    if (!this.cause || !this.last) return;
    this.cause.textContent = causeText(this.last, this.lang, clock(this.last.timestamp));
    this.cause.lang = this.lang;
    this.cause.dataset.user = this.last.component || "";
    this.cause.dataset.target = [this.last.resource, this.last.namespace, this.last.name].filter(Boolean).join("/");
    this.cause.hidden = false;
    flash(this.cause);
  }

  renderLine() {
    if (!this.line) return;
    this.line.dataset.count = String(this.count);
    const text = this.line.querySelector(".feed-background-text");
    const toggle = this.line.querySelector(".feed-background-toggle");
    text.dataset.count = String(this.count);
    if (this.shown) {
      setText(text, "feed.background.shown", "Background steps (leases, node heartbeats, Event writes, the dashboard's own checks) are listed.", this.lang);
      setText(toggle, "feed.background.hide", "hide background", this.lang);
    } else {
      setText(text, "feed.background.hidden", `${this.count} background steps (leases, node heartbeats, Event writes, the dashboard's own checks) not listed.`, this.lang);
      setText(toggle, "feed.background.show", "show background", this.lang);
    }
  }
}

export function overview(stream) {
  clusterMap(foreground(stream));
  const page = new Overview();
  const story = new Story();
  // Unless they are listed, the background steps (a quarter of a busy
  // cluster's messages) are only counted: the server sends their count.
  if (!story.shown) stream.without("background").on("background", (m) => story.background(m.count));
  stream
    .on("watch", (m) => {
      if (m.kind === "Pod") page.upsertPod(m);
      else if (m.kind === "Node") page.upsertNode(m);
    })
    .on("audit", (m) => {
      if (!MUTATING.has(m.verb)) return;
      if (m.background && !story.shown) {
        story.background();
        return;
      }
      if (!m.background && isPerson(m.component)) story.caused(m);
      page.addFeed(m, "audit");
    })
    .on("event", (m) => {
      if (m.background && !story.shown) {
        story.background();
        return;
      }
      page.addFeed(m, "event");
    });
}
