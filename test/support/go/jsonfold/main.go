// Command jsonfold answers, as Go itself, the two questions Plexus's key handling must answer as
// Go does (test/integration/go-json-keys.test.ts):
//
//	jsonfold fold     prints "<code point> <fold>" (hex) for every code point whose fold is not
//	                  itself, the fold being what encoding/json's field matching compares: the
//	                  smallest rune of the code point's unicode.SimpleFold orbit.
//	jsonfold decode   reads one JSON document a line on stdin and prints, a line each, what a
//	                  plugin built on libcni's types reads of it: the struct below, and a
//	                  map[string]interface{} decode of the same bytes; or {"error": "..."}.
//
// Run with no argument and CNI_COMMAND set, it is a CNI plugin (installed under a plugin's type):
// it appends {"command": ..., "seen": ...} for its stdin to jsonfold.calls beside itself, and
// answers ADD with its prevResult, or else a result of one address.
//
// Only the standard library: the test builds it offline.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"unicode"
)

// IPAM is libcni's types.IPAM.
type IPAM struct {
	Type string `json:"type,omitempty"`
}

// DNS is libcni's types.DNS.
type DNS struct {
	Nameservers []string `json:"nameservers,omitempty"`
	Domain      string   `json:"domain,omitempty"`
	Search      []string `json:"search,omitempty"`
	Options     []string `json:"options,omitempty"`
}

// NetConf is libcni's types.NetConf plus the keys a chained plugin (portmap, bandwidth, tuning,
// static IPAM) reads that Plexus also sets: runtimeConfig and args.
type NetConf struct {
	CNIVersion       string                 `json:"cniVersion,omitempty"`
	Name             string                 `json:"name,omitempty"`
	Type             string                 `json:"type,omitempty"`
	Capabilities     map[string]bool        `json:"capabilities,omitempty"`
	IPAM             IPAM                   `json:"ipam,omitempty"`
	DNS              DNS                    `json:"dns"`
	RawPrevResult    map[string]interface{} `json:"prevResult,omitempty"`
	RuntimeConfig    map[string]interface{} `json:"runtimeConfig,omitempty"`
	Args             *Args                  `json:"args,omitempty"`
	ValidAttachments []interface{}          `json:"cni.dev/valid-attachments,omitempty"`
}

// Args is what static IPAM and tuning read of the CNI_ARGS conventions' args.cni.
type Args struct {
	CNI *struct {
		IPs interface{} `json:"ips,omitempty"`
		Mac interface{} `json:"mac,omitempty"`
	} `json:"cni,omitempty"`
}

// Seen is one line of output: the struct as the plugin reads it, and the plain map.
type Seen struct {
	Struct NetConf                `json:"struct"`
	Map    map[string]interface{} `json:"map"`
}

func foldRune(r rune) rune {
	for {
		next := unicode.SimpleFold(r)
		if next <= r {
			return next
		}
		r = next
	}
}

func printFolds(out *bufio.Writer) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if f := foldRune(r); f != r {
			fmt.Fprintf(out, "%x %x\n", r, f)
		}
	}
}

func decode(doc []byte) (Seen, error) {
	var seen Seen
	err := json.Unmarshal(doc, &seen.Struct)
	if err == nil {
		err = json.Unmarshal(doc, &seen.Map)
	}
	return seen, err
}

func decodeLines(out *bufio.Writer) error {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 0, 1<<20), 16<<20)
	enc := json.NewEncoder(out)
	for in.Scan() {
		seen, err := decode(in.Bytes())
		if err != nil {
			if encErr := enc.Encode(map[string]string{"error": err.Error()}); encErr != nil {
				return encErr
			}
			continue
		}
		if err := enc.Encode(seen); err != nil {
			return err
		}
	}
	return in.Err()
}

func plugin(command string) error {
	if command == "VERSION" {
		_, err := os.Stdout.WriteString(`{"cniVersion":"1.0.0","supportedVersions":` +
			`["0.1.0","0.2.0","0.3.0","0.3.1","0.4.0","1.0.0","1.1.0"]}`)
		return err
	}
	doc, err := io.ReadAll(os.Stdin)
	if err != nil {
		return err
	}
	seen, err := decode(doc)
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	calls := filepath.Join(filepath.Dir(exe), "jsonfold.calls")
	file, err := os.OpenFile(calls, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer file.Close()
	line := map[string]interface{}{"command": command, "seen": seen}
	if err := json.NewEncoder(file).Encode(line); err != nil {
		return err
	}
	if command != "ADD" {
		return nil
	}
	result := seen.Struct.RawPrevResult
	if result == nil {
		result = map[string]interface{}{"ips": []interface{}{map[string]string{"address": "10.1.2.3/24"}}}
	}
	result["cniVersion"] = seen.Struct.CNIVersion
	return json.NewEncoder(os.Stdout).Encode(result)
}

func main() {
	if command := os.Getenv("CNI_COMMAND"); len(os.Args) == 1 && command != "" {
		if err := plugin(command); err != nil {
			fmt.Printf(`{"cniVersion":"1.0.0","code":999,"msg":%q}`, err.Error())
			os.Exit(1)
		}
		return
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: jsonfold fold|decode")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "fold":
		printFolds(out)
	case "decode":
		if err := decodeLines(out); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	default:
		fmt.Fprintln(os.Stderr, "usage: jsonfold fold|decode")
		os.Exit(2)
	}
}
