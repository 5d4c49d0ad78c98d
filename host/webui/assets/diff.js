// diff.js: a line diff for two versions of a job (a few hundred lines):
// the longest common subsequence, then the changes with three lines of
// context marked near.

export function diffLines(a, b) {
  const x = a.split('\n');
  const y = b.split('\n');
  const n = x.length;
  const m = y.length;
  if (n * m > 4e6) {
    // Too large to compare line by line here: all out, all in.
    return [...x.map((t) => ({op: '-', text: t})), ...y.map((t) => ({op: '+', text: t}))];
  }
  const w = m + 1;
  const lcs = new Uint32Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i * w + j] = x[i] === y[j] ? lcs[(i + 1) * w + j + 1] + 1 : Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) { out.push({op: ' ', text: x[i]}); i++; j++; }
    else if (lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) out.push({op: '-', text: x[i++]});
    else out.push({op: '+', text: y[j++]});
  }
  while (i < n) out.push({op: '-', text: x[i++]});
  while (j < m) out.push({op: '+', text: y[j++]});
  out.forEach((l, k) => {
    if (l.op !== ' ') return;
    for (let d = -3; d <= 3; d++) {
      const o = out[k + d];
      if (o && o.op !== ' ') { l.near = true; break; }
    }
  });
  return out;
}
