extension StudioAssets {
    /// The page's script: a view per `#/…` route, each drawn from `/api/…`, redrawn when
    /// the event stream reports a commit. Text only ever enters the page as text nodes.
    static let script = #"""
    "use strict";

    // ---- DOM helpers: elements from tags, attributes and children; strings become text nodes.
    function el(tag, attributes, ...children) {
      const node = document.createElement(tag);
      for (const [name, value] of Object.entries(attributes || {})) {
        if (value === undefined || value === null || value === false) continue;
        if (name === "className") node.className = value;
        else if (name === "onclick" || name === "onsubmit" || name === "onchange") node[name] = value;
        else node.setAttribute(name, String(value));
      }
      for (const child of children.flat()) {
        if (child === undefined || child === null || child === false) continue;
        node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
      }
      return node;
    }
    function svg(tag, attributes, ...children) {
      const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
      for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, String(value));
      for (const child of children.flat()) node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
      return node;
    }
    function table(headers, rows, className) {
      return el("table", { className: className || "grid" },
        el("thead", {}, el("tr", {}, headers.map(h => el("th", {}, h)))),
        el("tbody", {}, rows.map(row => el("tr", {}, row.map(cell => el("td", {}, cell))))));
    }
    function bytes(n) {
      if (n < 10000) return n + " B";
      if (n < 10000000) return (n / 1024).toFixed(1) + " KiB";
      if (n < 10000000000) return (n / 1048576).toFixed(1) + " MiB";
      return (n / 1073741824).toFixed(2) + " GiB";
    }
    function percent(x) { return (x * 100).toFixed(0) + "%"; }
    function link(hash, ...children) { return el("a", { href: hash }, ...children); }
    function enc(text) { return encodeURIComponent(text); }

    // ---- Requests: JSON, with the server's error message; a busy server is asked again.
    class StudioFailure extends Error {
      constructor(body, status) {
        super(body.error || ("HTTP " + status));
        this.kind = body.kind; this.offset = body.offset; this.status = status;
      }
    }
    async function api(path) {
      for (let attempt = 0; ; attempt++) {
        const response = await fetch(path, { headers: { "Accept": "application/json" } });
        let body;
        try { body = await response.json(); } catch (e) { body = { error: "the answer was not JSON (HTTP " + response.status + ")" }; }
        if (response.ok) return body;
        if (response.status === 503 && attempt < 60) { await new Promise(r => setTimeout(r, 1000)); continue; }
        throw new StudioFailure(body, response.status);
      }
    }

    // ---- Routes: #/view/arg/arg?param=value
    function parseRoute() {
      const hash = location.hash.replace(/^#\/?/, "");
      const [path, search] = hash.split("?");
      const parts = (path || "").split("/").filter(p => p.length > 0).map(decodeURIComponent);
      return { view: parts[0] || "overview", args: parts.slice(1), params: new URLSearchParams(search || "") };
    }

    const main = document.getElementById("main");
    const errorBox = document.getElementById("error");
    let renderCount = 0;

    function showError(error) {
      errorBox.hidden = false;
      errorBox.replaceChildren(
        el("strong", {}, error.kind === "corruption" ? "The file is damaged" : "Could not read this view"),
        el("span", { id: "error-message" }, ": " + error.message + (error.offset !== undefined ? " (offset " + error.offset + ")" : "")));
    }

    async function render() {
      const route = parseRoute();
      const ticket = ++renderCount;
      for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("current", a.dataset.view === route.view);
      const view = views[route.view] || views.overview;
      main.dataset.ready = "false";
      try {
        const content = await view(route);
        if (ticket !== renderCount) return;   // a newer render started meanwhile
        errorBox.hidden = true;
        main.replaceChildren(content);
      } catch (error) {
        if (ticket !== renderCount) return;
        main.replaceChildren(el("p", { className: "muted" }, error.kind === "corruption"
          ? "Verify lists every fault it finds; from a terminal, storedump verify and storedump frames show the same."
          : "Other views may still answer; the error above says what this one needs."));
        showError(error);
      }
      main.dataset.view = route.view;
      main.dataset.ready = "true";
    }

    // ---- Records as a table: the key, then the top-level fields in the order first seen.
    function cellText(value) {
      if (value === null) return "null";
      if (typeof value === "object") return JSON.stringify(value);
      return String(value);
    }
    function recordTable(collection, records) {
      const fields = [];
      for (const record of records) {
        if (record.value && typeof record.value === "object" && !Array.isArray(record.value)) {
          for (const name of Object.keys(record.value)) if (!fields.includes(name)) fields.push(name);
        }
      }
      return table(["key", ...fields], records.map(record => [
        link("#/record/" + enc(collection) + "/" + record.keyHex, record.key),
        ...fields.map(name => record.value && name in record.value ? cellText(record.value[name]) : "")
      ]), "grid records");
    }

    // ---- Views
    const views = {
      async overview() {
        const info = await api("/api/info");
        const rows = [
          ["file", info.path],
          ["size", bytes(info.fileSize)],
          ["format", info.magic + ", read version " + info.readVersion + ", write version " + info.writeVersion + ", page size " + info.pageSize],
          ["created", info.created],
          ["checkpoint", info.checkpoint ? "commit " + info.checkpoint.sequence + " @" + info.checkpoint.offset + ", " + info.checkpoint.time : "none"],
          ["last commit", info.lastCommit ? "commit " + info.lastCommit.sequence + " @" + info.lastCommit.offset + ", " + info.lastCommit.time : "none"],
          ["log since checkpoint", bytes(info.logBytesSinceCheckpoint) + " (replayed at open)"],
          ["tail", (info.tornTailBytes === 0 ? "clean" : info.tornTailBytes + " torn bytes (an interrupted write; the next writable open drops them)")
            + (info.preallocatedBytes ? ", then " + bytes(info.preallocatedBytes) + " preallocated for the log (trimmed on close)" : "")],
        ];
        const space = el("div", { id: "overview-space" }, "live and dead bytes: analysing…");
        api("/api/stats").then(stats => {
          space.replaceChildren(table(["live", "dead", "of which no tree's"], [[bytes(stats.liveBytes), bytes(stats.deadBytes), bytes(stats.unattributedDeadBytes)]]),
            spaceBar(stats));
        }, error => space.replaceChildren("live and dead bytes: " + error.message));
        return el("section", { id: "overview" },
          el("h2", {}, "The file at a glance"),
          table(["", ""], rows, "grid facts"),
          el("h3", {}, "Space"), space,
          el("h3", {}, "Trees"),
          table(["tree", "entries"], info.trees.map(t => [link("#/tree/" + enc(t.name), t.name), String(t.entries)])));
      },

      async collections() {
        const collections = await api("/api/collections");
        if (collections.length === 0) return el("section", {}, el("h2", {}, "Collections"), el("p", {}, "This file has no collections (only engine trees: see Trees)."));
        return el("section", { id: "collections" }, el("h2", {}, "Collections"), collections.map(c => el("article", { className: "collection", "data-name": c.name },
          el("h3", {}, c.name, " ", el("span", { className: "count" }, c.records + " records"), " ", el("span", { className: "muted" }, c.modelType)),
          el("p", {}, link("#/browse/" + enc(c.name), "Browse"), " · ", link("#/query?collection=" + enc(c.name), "Query"), " · ", link("#/tree/" + enc(c.name), "Tree")),
          table(["primary key", "type"], c.primaryKey.map((f, i) => [f, c.primaryKeyTypes[i] || "?"])),
          table(["field", "stored type"], c.fields.map(f => [f, (c.storedTypes && c.storedTypes[f]) || c.fieldTypes[f] || "?"])),
          c.indexes.length ? table(["index", "fields", "unique", "entries"], c.indexes.map(i => [i.name, i.fields.join(", "), i.unique ? "yes" : "", String(i.entries)])) : el("p", { className: "muted" }, "no indexes"),
          c.unreadFields && c.unreadFields.length ? el("p", { className: "warning" }, "stored but read by no model: " + c.unreadFields.join(", ")) : null)));
      },

      async browse(route) {
        let name = route.args[0];
        if (!name) {
          const collections = await api("/api/collections");
          if (collections.length === 0) return el("p", {}, "This file has no collections.");
          name = collections[0].name;
        }
        const from = route.params.get("from") || "";
        const limit = route.params.get("limit") || "50";
        const page = await api("/api/collections/" + enc(name) + "/records?limit=" + enc(limit) + (from ? "&from=" + enc(from) : ""));
        const pager = el("p", { className: "pager" },
          link("#/browse/" + enc(name), "First page"), " ",
          from ? el("a", { href: "#", id: "previous", onclick: e => { e.preventDefault(); history.back(); } }, "← Previous") : null, " ",
          page.next ? link("#/browse/" + enc(name) + "?from=" + page.next + "&limit=" + enc(limit), "Next page →") : el("span", { className: "muted" }, "last page"));
        pager.querySelector("a:last-of-type").id = page.next ? "next" : "";
        return el("section", { id: "browse", "data-collection": name },
          el("h2", {}, "Records of ", name),
          el("p", { className: "muted" }, page.records.length + " records from " + (from ? "key " + (page.records[0] ? page.records[0].key : "?") : "the first") + ", in primary-key order"),
          recordTable(name, page.records), pager);
      },

      async record(route) {
        const [name, keyHex] = route.args;
        const record = await api("/api/collections/" + enc(name) + "/records/" + enc(keyHex));
        return el("section", { id: "record" },
          el("h2", {}, name, " · ", record.key),
          el("p", {}, link("#/browse/" + enc(name) + "?from=" + keyHex, "Browse from here")),
          el("pre", { className: "json", id: "record-json" }, JSON.stringify(record.value, null, 2)));
      },

      async query(route) {
        const collections = await api("/api/collections");
        const params = route.params;
        const chosen = params.get("collection") || (collections[0] && collections[0].name) || "";
        const form = el("form", { id: "query-form", onsubmit: e => {
            e.preventDefault();
            const q = new URLSearchParams();
            for (const field of ["collection", "where", "sort", "limit"]) { const v = form.elements[field].value; if (v) q.set(field, v); }
            q.set("run", String(Date.now()));
            location.hash = "#/query?" + q.toString();
          } },
          el("label", {}, "collection ", el("select", { name: "collection" }, collections.map(c => el("option", { value: c.name, selected: c.name === chosen ? "selected" : null }, c.name)))),
          el("label", { className: "wide" }, "where ", el("input", { name: "where", size: 60, placeholder: "age >= 30 AND city IN ('Oslo', 'Lima')", value: params.get("where") || "" })),
          el("label", {}, "sort ", el("input", { name: "sort", size: 12, placeholder: "name,-age", value: params.get("sort") || "" })),
          el("label", {}, "limit ", el("input", { name: "limit", size: 4, value: params.get("limit") || "50" })),
          el("button", { type: "submit", id: "run-query" }, "Run"));
        const section = el("section", { id: "query" }, el("h2", {}, "Query"), form,
          el("p", { className: "muted" }, "Grammar: field = | != | < | <= | > | >= value, IN (…), BETWEEN … AND …, BEGINSWITH, CONTAINS, LIKE and ILIKE (* any run, ? one; ILIKE ignores case), NOT, AND, OR, ( ). Values: numbers, 'strings', true, false, null."));
        if (!params.has("run") && !params.has("where")) return section;
        const q = new URLSearchParams({ collection: chosen, where: params.get("where") || "", sort: params.get("sort") || "", limit: params.get("limit") || "50" });
        const result = await api("/api/query?" + q.toString());
        const count = result.count.complete ? result.count.value + " matches" : "at least " + result.count.value + " matches (counting stopped after 2 s)";
        section.append(
          el("p", { id: "query-count", className: "count" }, count, " · showing " + result.records.length),
          el("h3", {}, "Plan"), el("pre", { id: "query-plan", className: "plan" }, result.plan.text),
          result.plan.alternatives.length ? table(["considered", "estimated rows"], result.plan.alternatives.map(a => [a.access, String(a.estimatedRows)])) : null,
          el("h3", {}, "Records"), recordTable(chosen, result.records));
        return section;
      },

      async space() {
        const stats = await api("/api/stats");
        return el("section", { id: "space" },
          el("h2", {}, "Where the space goes"),
          table(["file", "live", "dead", "of which no tree's"], [[bytes(stats.fileSize), bytes(stats.liveBytes), bytes(stats.deadBytes), bytes(stats.unattributedDeadBytes)]]),
          spaceBar(stats),
          el("h3", {}, "Per tree: live and dead bytes"), treeChart(stats.trees),
          table(["tree", "entries", "depth", "pages", "stored", "raw", "compression", "fill", "dead", "out of line"], stats.trees.map(t => [
            link("#/tree/" + enc(t.name), t.name), String(t.entries), String(t.depth), String(t.leafPages + t.branchPages), bytes(t.storedBytes), bytes(t.rawBytes),
            t.rawBytes ? (t.storedBytes / t.rawBytes).toFixed(2) : "-", percent(t.fillFactor), bytes(t.deadBytes),
            t.overflowValues ? t.overflowValues + " (" + bytes(t.overflowStoredBytes) + ")" : ""])));
      },

      async tree(route) {
        const info = await api("/api/info");
        const list = el("p", { className: "tree-list" }, info.trees.map(t => [link("#/tree/" + enc(t.name), t.name), " "]));
        const name = route.args[0];
        if (!name) return el("section", { id: "trees" }, el("h2", {}, "Trees"), list);
        const shape = await api("/api/tree/" + enc(name));
        return el("section", { id: "tree", "data-tree": shape.tree },
          el("h2", {}, "Tree ", shape.tree), list,
          el("p", { id: "tree-summary" }, shape.entries + " entries, depth " + shape.depth),
          table(["level", "pages", "fan-out", "fill"], shape.levels.map(l => [String(l.depth), String(l.pages), l.averageFanOut.toFixed(1), percent(l.fill)])),
          el("h3", {}, "Pages"),
          table(["page", "level", "kind", "entries", "bytes", "first key", "last key"], shape.pages.map(p => [
            p.offset === undefined || p.offset === null ? "(memory)" : link("#/page/" + p.offset, "@" + p.offset), String(p.depth), p.kind, String(p.entries), String(p.bytes), p.firstKey || "", p.lastKey || ""])),
          shape.pagesOmitted ? el("p", { className: "muted" }, "… " + shape.pagesOmitted + " more pages (storedump tree --json lists them all)") : null);
      },

      async page(route) {
        const offset = route.args[0];
        const page = await api("/api/page/" + enc(offset));
        const rows = page.kind === "leaf"
          ? table(["key", "value bytes", "out of line"], page.entries.map(e => [e.key, String(e.valueLength), e.valueOffset === undefined || e.valueOffset === null ? "" : "@" + e.valueOffset]))
          : table(["child", "length", "keys from"], page.children.map(c => [link("#/page/" + c.offset, "@" + c.offset), String(c.length), c.lowerKey || "(start)"]));
        return el("section", { id: "page", "data-kind": page.kind },
          el("h2", {}, page.kind + " page @" + page.offset),
          el("p", { id: "page-summary" }, page.storedBytes + " bytes stored, " + page.rawBytes + " raw, " +
            (page.kind === "leaf" ? page.entries.length + " entries" : page.children.length + " children")),
          rows);
      },

      async verify(route) {
        const section = el("section", { id: "verify" }, el("h2", {}, "Verify"),
          el("p", {}, "Checks every frame's checksum, the commit chain, every tree's order and counts, out-of-line values and every index against its records."),
          el("p", {}, link("#/verify?run=full", "Run full verify"), " · ", link("#/verify?run=quick", "Quick (checksums and commit chain)")));
        const run = route.params.get("run");
        if (!run) return section;
        const report = await api("/api/verify" + (run === "quick" ? "?quick=true" : ""));
        const errors = report.faults.filter(f => f.severity === "error").length;
        section.append(
          el("p", { id: "verify-result", className: report.clean ? "clean" : "faulty" },
            report.clean ? "clean" + (report.faults.length ? " (" + report.faults.length + " warnings)" : "") : errors + " faults" + (report.opens ? "" : " (the file does not open)")),
          report.faults.length ? table(["severity", "offset", "fault"], report.faults.map(f => [f.severity, String(f.offset), f.message])) : null);
        return section;
      },
    };

    // ---- Charts (SVG built from numbers; labels are text nodes)
    function spaceBar(stats) {
      const total = Math.max(stats.fileSize, 1), width = 600;
      const live = Math.round(width * Math.min(stats.liveBytes, total) / total);
      return svg("svg", { width: width + 2, height: 28, class: "bar", role: "img" },
        svg("title", {}, "live " + bytes(stats.liveBytes) + ", dead " + bytes(stats.deadBytes)),
        svg("rect", { x: 1, y: 1, width: live, height: 24, class: "live-bytes" }),
        svg("rect", { x: 1 + live, y: 1, width: width - live, height: 24, class: "dead-bytes" }),
        svg("text", { x: 8, y: 18 }, "live " + bytes(stats.liveBytes) + " · dead " + bytes(stats.deadBytes)));
    }
    function treeChart(trees) {
      const rowHeight = 22, labelWidth = 220, width = 480;
      const largest = Math.max(1, ...trees.map(t => t.storedBytes + t.deadBytes));
      const rows = trees.map((t, i) => {
        const live = Math.max(1, Math.round(width * t.storedBytes / largest));
        const dead = Math.round(width * t.deadBytes / largest);
        const y = i * rowHeight;
        return svg("g", {},
          svg("text", { x: 0, y: y + 15, class: "label" }, t.name.length > 30 ? t.name.slice(0, 29) + "…" : t.name),
          svg("rect", { x: labelWidth, y: y + 3, width: live, height: rowHeight - 6, class: "live-bytes" }, svg("title", {}, t.name + ": " + bytes(t.storedBytes) + " live, fill " + percent(t.fillFactor))),
          svg("rect", { x: labelWidth + live, y: y + 3, width: dead, height: rowHeight - 6, class: "dead-bytes" }, svg("title", {}, t.name + ": " + bytes(t.deadBytes) + " dead")),
          svg("text", { x: labelWidth + live + dead + 6, y: y + 15, class: "value" }, bytes(t.storedBytes) + " · fill " + percent(t.fillFactor) + (t.rawBytes ? " · " + (t.storedBytes / t.rawBytes).toFixed(2) + "×" : "")));
      });
      return svg("svg", { width: labelWidth + width + 200, height: Math.max(rowHeight, trees.length * rowHeight), class: "chart", id: "tree-chart", role: "img" }, rows);
    }

    // ---- Live: redraw the view when another process commits.
    const live = document.getElementById("live");
    function follow() {
      const events = new EventSource("/api/events");
      events.addEventListener("hello", e => {
        const data = JSON.parse(e.data);
        live.dataset.state = "live"; live.dataset.sequence = data.sequence;
        live.textContent = "live · commit " + data.sequence;
      });
      events.addEventListener("commit", e => {
        const data = JSON.parse(e.data);
        live.dataset.sequence = data.sequence;
        live.textContent = "live · commit " + data.sequence;
        live.classList.remove("flash"); void live.offsetWidth; live.classList.add("flash");
        const view = parseRoute().view;
        if (view !== "verify" && view !== "record" && view !== "page") render();
      });
      events.onerror = () => { live.dataset.state = "reconnecting"; live.textContent = "reconnecting…"; };
    }

    window.addEventListener("hashchange", render);
    api("/api/studio").then(studio => { document.getElementById("file").textContent = studio.path; }, () => {});
    render();
    follow();
    """#
}
