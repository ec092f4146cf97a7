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

applyLang();
langButtons();
presenter();
if (document.body.dataset.page === "object") timelineKeys();

const stream = new Stream();
const page = pages[document.body.dataset.page];
if (page) page(stream);
if (document.body.dataset.page === "object") {
  servicePage(stream);
  workloadPage(stream);
}
if (document.body.dataset.page === "overview") {
  tempo(stream);
  // Of the objects, the overview reads only the tempo ConfigMap's data.
  stream.objects("ConfigMap");
}
if (document.body.dataset.page === "apply") applyPage();
if (document.body.dataset.page === "demos") demosPage();
if (!["login", "error"].includes(document.body.dataset.page)) stream.start();
