/// The page Studio serves: one HTML document, one script, one style sheet, all held in the
/// binary (no build step, nothing fetched from the network). The script draws every view
/// from the `/api/…` JSON with DOM text nodes only, never HTML strings, so a record's bytes
/// cannot become markup; the Content-Security-Policy header (`StudioResponse`) lets the
/// page run only this script.
enum StudioAssets {
    static let page = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Strata Studio</title>
    <link rel="stylesheet" href="/studio.css">
    </head>
    <body>
    <header>
      <span class="brand">Strata Studio</span>
      <span id="file" class="file"></span>
      <span id="live" class="live" data-state="connecting">connecting…</span>
    </header>
    <nav id="nav">
      <a href="#/" data-view="overview">Overview</a>
      <a href="#/collections" data-view="collections">Collections</a>
      <a href="#/browse" data-view="browse">Records</a>
      <a href="#/query" data-view="query">Query</a>
      <a href="#/space" data-view="space">Space</a>
      <a href="#/tree" data-view="tree">Trees</a>
      <a href="#/verify" data-view="verify">Verify</a>
    </nav>
    <div id="error" class="error" hidden></div>
    <main id="main" data-view="" data-ready="false"></main>
    <script src="/studio.js"></script>
    </body>
    </html>
    """#
}
