// Entry point: one stream per page, wired to the page's behaviour.
import { Stream } from "./live.js";
import { overview } from "./overview.js";
import { objectPage } from "./object.js";
import { servicePage } from "./service.js";
import { workloadPage } from "./workload.js";
import { etcdPage } from "./etcd.js";
import { requestsPage } from "./requests.js";
import { presenter, timelineKeys } from "./presenter.js";
import { tempo } from "./tempo.js";
import { applyPage } from "./apply.js";
import { demosPage } from "./demos.js";
import { applyLang, langButtons } from "./i18n.js";

const pages = { overview, object: objectPage, etcd: etcdPage, requests: requestsPage };

// A part of the page that fails to set up is reported and left out; the
// others, and the page's stream, still start.
function wire(name, fn) {
  try {
    fn();
  } catch (err) {
    console.error(`glassplane: failed to set up ${name}`, err);
  }
}

const kind = document.body.dataset.page;
wire("language", () => {
  applyLang();
  langButtons();
});
wire("presenter", presenter);
if (kind === "object") wire("timeline keys", timelineKeys);

const stream = new Stream();
const page = pages[kind];
if (page) wire(`the ${kind} page`, () => page(stream));
if (kind === "object") {
  wire("the service panel", () => servicePage(stream));
  wire("the workload panel", () => workloadPage(stream));
}
if (kind === "overview") {
  wire("tempo", () => tempo(stream));
  // Of the objects, the overview reads only the tempo ConfigMap's data.
  stream.objects("ConfigMap");
}
// Only the requests page shows a request's details (authentication,
// authorization, admission): half of a busy stream's bytes.
if (kind !== "requests") stream.without("request");
if (kind === "apply") wire("the apply form", applyPage);
if (kind === "demos") wire("the demos", demosPage);
if (!["login", "error"].includes(kind)) stream.start();
