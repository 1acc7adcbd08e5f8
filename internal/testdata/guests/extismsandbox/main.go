//go:build wasip1

// Command extismsandbox is an extism-PDK guard that reports what it can see
// of the clock, randomness, environment, files and extism config, or tries
// an HTTP request when args.http is set.
package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"time"

	"github.com/extism/go-pdk"
)

//go:wasmimport extism:host/user warden_success
func wardenSuccess(msg, data uint64)

//go:wasmimport extism:host/user warden_now
func wardenNow() int64

//go:wasmimport extism:host/user warden_random
func wardenRandom(n uint64) uint64

//go:wasmimport extism:host/user warden_log
func wardenLog(msg uint64)

//go:wasmexport warden_manifest
func manifest() int32 {
	pdk.OutputString(`{"name":"extismsandbox","version":"1.0.0","abi":1,"role":"guard","phases":["before"]}`)
	return 0
}

//go:wasmexport warden_handle
func handle() int32 {
	var req struct {
		Args struct {
			HTTP string `json:"http"`
		} `json:"args"`
	}
	_ = json.Unmarshal(pdk.Input(), &req)
	if req.Args.HTTP != "" {
		pdk.NewHTTPRequest(pdk.MethodGet, req.Args.HTTP).Send()
	}
	_, cfg := pdk.GetConfig("key")
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	hostRnd := pdk.FindMemory(wardenRandom(8))
	_, fileErr := os.ReadFile("/etc/passwd")
	data, _ := json.Marshal(map[string]any{
		"now":        time.Now().UnixNano(),
		"hostNow":    wardenNow(),
		"random":     hex.EncodeToString(rnd[:]),
		"hostRandom": hex.EncodeToString(hostRnd.ReadBytes()),
		"env":        os.Environ(),
		"config":     cfg,
		"file":       fileErr != nil,
	})
	msg := pdk.AllocateString("seen")
	log := pdk.AllocateString("sandbox report")
	wardenLog(log.Offset())
	d := pdk.AllocateBytes(data)
	wardenSuccess(msg.Offset(), d.Offset())
	return 0
}

func main() {}
