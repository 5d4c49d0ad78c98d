// Package webui is the agent's web UI: a page and its scripts, embedded in the
// binary (nothing is loaded from the network, no build step: the files in
// assets/ are what the browser runs), served by the API server under
// /ui/ (apiserver.ServerConfig.UI).
//
// The pages need no token; everything they show comes from the API, which
// does. The page gets its token from the sign-in form or from a one-time
// token in the URL fragment (`pluginhost ui -authenticate`), keeps it in
// the tab's session storage and sends it as X-Nomad-Token. Every answer
// carries a Content-Security-Policy that allows scripts and styles from
// this origin only (no inline script, no eval), no framing, and no request
// to any other origin; the scripts build the page with DOM calls and
// textContent only, so what a job, a task or a plugin says is always text,
// never markup.
//
// Routes are Nomad's where the concept is the same (/ui/jobs,
// /ui/jobs/<id>, /ui/allocations/<id>, /ui/csi/plugins, /ui/csi/volumes);
// every path under /ui/ that is not an asset is the page, which routes on
// the client.
package webui
