extension StudioAssets {
    /// The page's style sheet.
    static let style = #"""
    :root { --ink: #1d2430; --muted: #6a7280; --line: #d9dde3; --accent: #2f6fdf; --live: #3a9a5b; --dead: #d9822b; --bad: #c0392b; }
    * { box-sizing: border-box; }
    body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: #f7f8fa; }
    header { display: flex; gap: 16px; align-items: baseline; padding: 10px 20px; background: #1d2430; color: #fff; }
    header .brand { font-weight: 700; font-size: 16px; }
    header .file { font-family: ui-monospace, monospace; color: #c9d1dc; flex: 1; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
    .live { font-size: 12px; padding: 2px 8px; border-radius: 10px; background: #3b4452; }
    .live[data-state="live"] { background: var(--live); }
    .live.flash { animation: flash 1s; }
    @keyframes flash { from { background: #f0c419; color: #000; } }
    nav { display: flex; gap: 2px; padding: 0 20px; background: #fff; border-bottom: 1px solid var(--line); }
    nav a { padding: 10px 12px; color: var(--ink); text-decoration: none; border-bottom: 2px solid transparent; }
    nav a.current { border-bottom-color: var(--accent); color: var(--accent); }
    main { padding: 16px 20px 40px; }
    h2 { margin: 4px 0 12px; font-size: 20px; }
    h3 { margin: 18px 0 8px; font-size: 15px; }
    a { color: var(--accent); }
    .muted { color: var(--muted); }
    .warning { color: var(--dead); }
    .error { margin: 12px 20px 0; padding: 10px 14px; border: 1px solid var(--bad); border-radius: 6px; background: #fdecea; color: var(--bad); }
    table.grid { border-collapse: collapse; background: #fff; margin: 6px 0 10px; max-width: 100%; }
    table.grid th, table.grid td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
    table.grid th { background: #eef1f5; font-weight: 600; }
    table.facts thead { display: none; }
    table.records td { max-width: 360px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; font-family: ui-monospace, monospace; font-size: 12.5px; }
    article.collection { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 8px 16px; margin-bottom: 14px; }
    article.collection table.grid { display: inline-table; margin-right: 16px; }
    .count { font-weight: 600; }
    pre.json, pre.plan { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px; overflow: auto; max-height: 70vh; white-space: pre-wrap; word-break: break-all; }
    form#query-form { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px; }
    form#query-form input, form#query-form select { font: inherit; padding: 4px 6px; }
    form#query-form input[name="where"] { font-family: ui-monospace, monospace; }
    button { font: inherit; padding: 4px 14px; background: var(--accent); color: #fff; border: 0; border-radius: 4px; cursor: pointer; }
    .pager a { margin-right: 12px; }
    svg .live-bytes { fill: var(--live); }
    svg .dead-bytes { fill: var(--dead); }
    svg text { font-size: 12px; fill: var(--ink); }
    svg.bar text { fill: #fff; font-weight: 600; }
    svg.bar { display: block; margin: 6px 0; }
    .clean { color: var(--live); font-weight: 700; }
    .faulty { color: var(--bad); font-weight: 700; }
    .tree-list a { margin-right: 10px; font-family: ui-monospace, monospace; }
    """#
}
