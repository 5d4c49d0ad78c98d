// Package layering holds no code, only the test that keeps the imports
// flowing the one way the README's Layout states: cmd → host → csi →
// dynamic, inside csi volumes → plugins → csi, plugins → sdk, and the
// packages other programs import (sdk, csi, dynamic) free of the agent.
package layering
