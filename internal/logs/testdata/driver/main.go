// Command driver is a stand-in for `podhost log-driver` in integration
// tests: the shim runs it as `driver log-driver <encoded config>`.
package main

import "github.com/podhost/podhost/internal/logs"

func main() { logs.RunDriver() }
