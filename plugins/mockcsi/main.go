// Command mockcsi is a CSI plugin written with pluginhost's sdk.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "mockcsi: not built yet")
	os.Exit(1)
}
