// harnesskit's session page. Everything from the session file is untrusted: it is only ever put into
// the page with textContent, never as HTML, and no URL from it is ever followed.
(function () {
  "use strict";
  const header = JSON.parse(document.getElementById("hk-header").textContent);
  const entries = JSON.parse(document.getElementById("hk-entries").textContent);
  const $ = (sel) => document.querySelector(sel);
  const el = (tag, cls, text) => {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  };

  // ------------------------------------------------------------------ the tree (pi's rules)
  const byId = new Map();
  entries.forEach((e, i) => { if (typeof e.id === "string") byId.set(e.id, i); }); // the last wins, as pi
  const parentOf = (i) => {
    const p = entries[i].parentId;
    return typeof p === "string" && byId.has(p) ? byId.get(p) : -1;
  };
  const children = new Map();
  const roots = [];
  entries.forEach((e, i) => {
    const p = parentOf(i);
    if (p < 0 || p === i) roots.push(i);
    else { if (!children.has(p)) children.set(p, []); children.get(p).push(i); }
  });
  const labels = new Map();
  let name = null;
  entries.forEach((e) => {
    if (e.type === "label" && typeof e.targetId === "string") {
      if (typeof e.label === "string" && e.label) labels.set(e.targetId, e.label); else labels.delete(e.targetId);
    } else if (e.type === "session_info" && typeof e.name === "string") {
      name = e.name.trim() || null;
    }
  });
  const leaf = entries.length - 1;
  const pathTo = (i) => {
    const path = [];
    const seen = new Set();
    while (i >= 0 && !seen.has(i)) { seen.add(i); path.push(i); i = parentOf(i); }
    return path.reverse();
  };

  // ------------------------------------------------------------------ what an entry says
  const roleOf = (e) => (e.type === "message" && e.message && typeof e.message === "object" ? e.message.role : null);
  const blocksText = (content) => {
    if (typeof content === "string") return content;
    if (!Array.isArray(content)) return "";
    return content.map((b) => {
      if (!b || typeof b !== "object") return "";
      if (b.type === "text") return String(b.text ?? "");
      if (b.type === "toolCall") return `→ ${b.name} ${JSON.stringify(b.arguments ?? {})}`;
      if (b.type === "thinking") return "[thinking]";
      if (b.type === "image") return "[image]";
      return `[${b.type}]`;
    }).join(" ");
  };
  const summaryOf = (e) => {
    const m = e.message;
    switch (e.type) {
      case "message":
        if (!m || typeof m !== "object") return "(no message)";
        if (m.role === "toolResult") return `${m.toolName} ${m.isError ? "✗" : "→"} ${blocksText(m.content)}`;
        if (m.role === "bashExecution") return `$ ${m.command} → exit ${m.exitCode}`;
        return blocksText(m.content);
      case "compaction": return `compaction: ${e.summary ?? ""}`;
      case "branch_summary": return `branch summary: ${e.summary ?? ""}`;
      case "model_change": return `model ${e.provider}/${e.modelId}`;
      case "thinking_level_change": return `thinking ${e.thinkingLevel}`;
      case "label": return `label ${e.targetId} ← ${e.label ?? "(cleared)"}`;
      case "session_info": return `name: ${e.name ?? ""}`;
      case "custom_message": return `${e.customType}: ${blocksText(e.content)}`;
      case "custom": return `${e.customType} ${JSON.stringify(e.data ?? null)}`;
      default: return String(e.type);
    }
  };
  const kindOf = (e) => (e.type === "message" ? `${roleOf(e) ?? "message"}` : String(e.type));
  // built at the first search, not at load: on a large session it is most of the page's start-up
  let searchText = null;
  const searchable = () => searchText || (searchText = entries.map((e) => (summaryOf(e) + " " +
    JSON.stringify(e)).toLowerCase()));
  const isToolOnly = (e) => {
    const m = e.message;
    if (!m) return false;
    if (m.role === "toolResult") return true;
    return m.role === "assistant" && Array.isArray(m.content) && m.content.length > 0 &&
      m.content.every((b) => b && b.type === "toolCall");
  };
  const FILTERS = {
    default: (e) => e.type === "message" || ["compaction", "branch_summary", "custom_message"].includes(e.type),
    "no-tools": (e) => FILTERS.default(e) && !isToolOnly(e),
    user: (e) => roleOf(e) === "user",
    labeled: (e) => typeof e.id === "string" && labels.has(e.id),
    all: () => true,
  };

  // ------------------------------------------------------------------ header and totals
  const totals = new Map();
  entries.forEach((e) => {
    const m = e.message;
    if (roleOf(e) !== "assistant" || !m.usage || typeof m.usage !== "object") return;
    const key = `${m.provider ?? "?"}/${m.model ?? "?"}`;
    const t = totals.get(key) || { messages: 0, input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0 };
    const num = (v) => (typeof v === "number" && isFinite(v) ? v : 0);
    t.messages += 1;
    for (const k of ["input", "output", "cacheRead", "cacheWrite"]) t[k] += num(m.usage[k]);
    t.cost += m.usage.cost && typeof m.usage.cost === "object" ? num(m.usage.cost.total) : 0;
    totals.set(key, t);
  });
  $("#title").textContent = name || `session ${header.id ?? ""}`;
  document.title = `${name || header.id || "session"} · harnesskit`;
  $("#meta").textContent = `${header.id ?? ""} · ${header.cwd ?? ""} · ${header.timestamp ?? ""} · ` +
    `${entries.length} entries`;
  const table = $("#totals");
  const head = el("tr");
  ["model", "messages", "input", "output", "cache read", "cache write", "cost"].forEach((h) => head.append(el("th", "", h)));
  table.append(head);
  for (const [model, t] of totals) {
    const row = el("tr");
    [model, t.messages, t.input, t.output, t.cacheRead, t.cacheWrite, `$${t.cost.toFixed(4)}`]
      .forEach((v) => row.append(el("td", "", typeof v === "number" ? v.toLocaleString("en") : v)));
    table.append(row);
  }

  // ------------------------------------------------------------------ the sidebar
  // Depth counts branch points only, so a long chain stays flat (as `harnesskit inspect --tree`).
  const order = [];
  const depth = new Int32Array(entries.length);
  const stack = roots.slice().reverse().map((i) => [i, roots.length > 1 ? 1 : 0]);
  const drawn = new Uint8Array(entries.length);
  while (stack.length) {
    const [i, d] = stack.pop();
    if (drawn[i]) continue;
    drawn[i] = 1;
    depth[i] = d;
    order.push(i);
    const kids = children.get(i) || [];
    const next = kids.length > 1 ? d + 1 : d;
    for (let k = kids.length - 1; k >= 0; k--) stack.push([kids[k], next]);
  }
  entries.forEach((_, i) => { if (!drawn[i]) order.push(i); }); // unreachable (a cycle): listed at the end

  let filter = "default";
  let query = "";
  let selected = leaf;
  let onPath = new Set(pathTo(leaf));
  const tree = $("#tree");
  const space = $("#tree-space");
  // Virtual rows: only the rows in view (and a few around) exist in the page, each placed at its
  // offset in a space as tall as all of them, so a tree of a million entries scrolls like a short one.
  const ROW = 22; // px, the height .node has in page.css
  const AROUND = 30;
  let visible = [];
  let drawnFrom = -1;
  let drawnTo = -1;

  function rowFor(i) {
    const e = entries[i];
    const row = el("div", "node");
    row.dataset.index = String(i);
    row.style.paddingLeft = `${0.4 + Math.min(depth[i], 30) * 0.9}em`;
    if (onPath.has(i)) row.classList.add("on-path");
    if (i === selected) row.classList.add("selected");
    if (i === leaf) row.classList.add("leaf");
    row.append(el("span", "kind kind-" + kindOf(e).replace(/[^a-zA-Z_-]/g, ""), kindOf(e)));
    if (typeof e.id === "string" && labels.has(e.id)) row.append(el("span", "label", labels.get(e.id)));
    row.append(el("span", "text", summaryOf(e).slice(0, 200)));
    row.addEventListener("click", () => select(i));
    return row;
  }
  function paint(force) {
    const from = Math.max(0, Math.floor(tree.scrollTop / ROW) - AROUND);
    const to = Math.min(visible.length, Math.ceil((tree.scrollTop + tree.clientHeight) / ROW) + AROUND);
    if (!force && from === drawnFrom && to === drawnTo) return;
    drawnFrom = from;
    drawnTo = to;
    const frag = document.createDocumentFragment();
    for (let k = from; k < to; k++) {
      const row = rowFor(visible[k]);
      row.style.top = `${k * ROW}px`;
      frag.append(row);
    }
    space.replaceChildren(frag);
  }
  tree.addEventListener("scroll", () => paint(false), { passive: true });
  new ResizeObserver(() => paint(false)).observe(tree);
  function drawTree() {
    const keep = FILTERS[filter];
    const q = query.toLowerCase();
    const text = q ? searchable() : null;
    visible = order.filter((i) => keep(entries[i]) && (!q || text[i].includes(q)));
    space.style.height = `${visible.length * ROW}px`;
    tree.scrollTop = 0;
    paint(true);
    $("#count").textContent = `${visible.length} of ${entries.length} entries`;
  }

  // ------------------------------------------------------------------ the conversation
  const main = $("#messages");
  const BIG = 20000;
  function textBlock(text, cls) {
    const pre = el("pre", cls);
    const s = String(text ?? "");
    pre.textContent = s.length > BIG ? s.slice(0, BIG) : s;
    if (s.length > BIG) {
      const rest = el("button", "more", `show all ${s.length.toLocaleString("en")} characters`);
      rest.addEventListener("click", () => { pre.textContent = s; rest.remove(); });
      return [pre, rest];
    }
    return [pre];
  }
  function collapsible(title, body, open) {
    const d = el("details", "fold");
    if (open) d.open = true;
    d.append(el("summary", "", title));
    body.forEach((b) => d.append(b));
    return d;
  }
  function contentNodes(content, role) {
    if (typeof content === "string") return textBlock(content, "text");
    if (!Array.isArray(content)) return [];
    const out = [];
    for (const b of content) {
      if (!b || typeof b !== "object") continue;
      if (b.type === "text") out.push(...textBlock(b.text, "text"));
      else if (b.type === "thinking") out.push(collapsible("thinking", textBlock(b.thinking, "thinking"), false));
      else if (b.type === "toolCall") {
        out.push(collapsible(`tool call: ${b.name}`, textBlock(JSON.stringify(b.arguments ?? {}, null, 2), "code"),
          role !== "toolResult"));
      } else if (b.type === "image") out.push(el("p", "note", `[image ${b.mimeType ?? ""}]`));
      else out.push(el("p", "note", `[${b.type}]`));
    }
    return out;
  }
  function card(i) {
    const e = entries[i];
    const m = e.message;
    const role = roleOf(e);
    const box = el("section", "card card-" + kindOf(e).replace(/[^a-zA-Z_-]/g, ""));
    box.dataset.index = String(i);
    const top = el("div", "card-head");
    top.append(el("span", "kind", kindOf(e)));
    if (typeof e.id === "string") top.append(el("span", "id", e.id));
    if (typeof e.id === "string" && labels.has(e.id)) top.append(el("span", "label", labels.get(e.id)));
    if (role === "assistant" && m) top.append(el("span", "model", `${m.provider ?? ""}/${m.model ?? ""} · ${m.stopReason ?? ""}`));
    if (typeof e.timestamp === "string") top.append(el("span", "time", e.timestamp));
    box.append(top);
    if (e.type === "message" && m && typeof m === "object") {
      if (role === "toolResult") {
        box.append(collapsible(`${m.toolName} ${m.isError ? "✗ error" : "→ result"}`, contentNodes(m.content, role), false));
      } else if (role === "bashExecution") {
        box.append(collapsible(`$ ${m.command} → exit ${m.exitCode}`, textBlock(m.output, "code"), false));
      } else {
        contentNodes(m.content, role).forEach((n) => box.append(n));
        if (m.errorMessage) box.append(el("p", "error", m.errorMessage));
      }
    } else if (e.type === "compaction") {
      box.append(el("p", "note", `earlier history compacted (${e.tokensBefore ?? "?"} tokens before; ` +
        `kept from ${e.firstKeptEntryId ?? "?"})`));
      textBlock(e.summary, "summary").forEach((n) => box.append(n));
    } else if (e.type === "branch_summary") {
      box.append(el("p", "note", `summary of the branch left at ${e.fromId ?? "?"}`));
      textBlock(e.summary, "summary").forEach((n) => box.append(n));
    } else if (e.type === "custom_message") {
      contentNodes(e.content, "custom").forEach((n) => box.append(n));
    } else {
      box.append(el("p", "note", summaryOf(e)));
    }
    return box;
  }
  let pathShown = 0;
  let path = [];
  function moreMessages() {
    const end = Math.min(pathShown + 200, path.length);
    const frag = document.createDocumentFragment();
    for (; pathShown < end; pathShown++) frag.append(card(path[pathShown]));
    main.insertBefore(frag, $("#messages-more"));
    $("#messages-more").textContent = pathShown < path.length ? `${path.length - pathShown} more…` : "";
  }
  new IntersectionObserver((seen) => { if (seen.some((s) => s.isIntersecting)) moreMessages(); })
    .observe($("#messages-more"));
  function select(i) {
    selected = i;
    const keep = FILTERS[filter === "user" || filter === "labeled" ? "default" : filter];
    path = pathTo(i).filter((p) => keep(entries[p]));
    onPath = new Set(path);
    main.querySelectorAll(".card").forEach((c) => c.remove());
    pathShown = 0;
    moreMessages();
    $("#branch").textContent = i === leaf ? "the current branch (to the last entry)" :
      `the branch to ${entries[i].id ?? "entry " + i}`;
    tree.querySelectorAll(".node").forEach((n) => {
      const k = Number(n.dataset.index);
      n.classList.toggle("on-path", onPath.has(k));
      n.classList.toggle("selected", k === i);
    });
  }

  document.querySelectorAll("#filters button").forEach((b) => b.addEventListener("click", () => {
    filter = b.dataset.filter;
    document.querySelectorAll("#filters button").forEach((o) => o.classList.toggle("active", o === b));
    drawTree();
    select(selected);
  }));
  $("#search").addEventListener("input", (ev) => { query = ev.target.value; drawTree(); });
  drawTree();
  select(leaf);
  document.body.dataset.ready = "1";
})();
