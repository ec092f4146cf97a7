// The page's websocket. It asks only for the message types the page has
// handlers for (and, when the page says so, for the objects of some kinds
// only: a pod's object is most of its message; without the parts it does
// not show: audit messages' request details, background steps counted
// rather than sent), starts from the revision and audit sequence the page was
// rendered at, resumes from the last ones it saw after a drop, and reloads
// the page when the server says changes were lost (resync). Each frame is a
// JSON array of messages (a busy cluster's changes arrive twenty frames a
// second), handled in order.

import { setText } from "./i18n.js";

const MAX_DELAY_MS = 5000;

export class Stream {
  constructor() {
    const body = document.body.dataset;
    this.revision = Number(body.revision || 0);
    this.seq = Number(body.auditSeq || 0);
    this.handlers = new Map();
    this.objectKinds = null; // null: objects of every kind
    this.leftOut = new Set(); // parts of the stream the page does without
    this.delay = 500;
    this.status = document.getElementById("conn");
  }

  // on registers a handler for one message type.
  on(type, fn) {
    if (!this.handlers.has(type)) this.handlers.set(type, []);
    this.handlers.get(type).push(fn);
    return this;
  }

  // objects limits the objects that watch messages carry to those kinds;
  // the other watch messages still describe their object (kind, name,
  // phase, node, ...).
  objects(...kinds) {
    this.objectKinds = [...(this.objectKinds || []), ...kinds];
    return this;
  }

  // without leaves parts of the stream out: "request" (audit messages'
  // request details, which only the requests page shows), "background"
  // (background steps arrive as counts, in background messages).
  without(...parts) {
    for (const p of parts) this.leftOut.add(p);
    return this;
  }

  start() {
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    // A background message comes with without=background: it is not a type
    // to ask for.
    const types = [...this.handlers.keys()].filter((t) => t !== "background").join(",");
    const params = new URLSearchParams({ since: String(this.revision), audit: String(this.seq), types });
    if (this.objectKinds) params.set("objects", this.objectKinds.join(","));
    if (this.leftOut.size) params.set("without", [...this.leftOut].join(","));
    const ws = new WebSocket(`${proto}//${location.host}/ws?${params}`);
    ws.addEventListener("open", () => {
      this.delay = 500;
      this.setState("live");
    });
    ws.addEventListener("message", (ev) => this.receive(ev.data));
    ws.addEventListener("close", () => {
      this.setState("reconnecting");
      setTimeout(() => this.start(), this.delay);
      this.delay = Math.min(this.delay * 2, MAX_DELAY_MS);
    });
  }

  receive(data) {
    let msgs;
    try {
      msgs = JSON.parse(data);
    } catch {
      return;
    }
    if (!Array.isArray(msgs)) return;
    for (const msg of msgs) {
      if (!this.dispatch(msg)) return;
    }
  }

  // dispatch hands one message to its handlers; false means the page is
  // reloading.
  dispatch(msg) {
    switch (msg.type) {
      case "hello":
        if (this.revision === 0) this.revision = msg.revision || 0;
        if (this.seq === 0) this.seq = msg.seq || 0;
        break;
      case "resync":
        this.setState("resyncing");
        location.reload();
        return false;
      case "audit":
        if (msg.seq > this.seq) this.seq = msg.seq;
        break;
      case "background":
        if (msg.seq > this.seq) this.seq = msg.seq;
        if (msg.revision > this.revision) this.revision = msg.revision;
        break;
      default:
        if (msg.revision > this.revision) this.revision = msg.revision;
    }
    for (const fn of this.handlers.get(msg.type) || []) {
      try {
        fn(msg);
      } catch (err) {
        console.error("glassplane: failed to handle a message", msg.type, err);
      }
    }
    return true;
  }

  setState(state) {
    if (!this.status) return;
    this.status.dataset.state = state;
    setText(this.status, `conn.${state}`, state);
  }
}
