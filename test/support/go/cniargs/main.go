// Command cniargs reads CNI_ARGS as a Multus ADD does, so that a test can compare Plexus's reading
// with Go's own (test/unit/cni/args-go.test.ts): it reads one JSON string a line on stdin and
// prints, a line each, what libcni's types.LoadArgs reads of it into Multus's K8sArgs:
// {"args": {...}}, or {"error": "..."}.
//
// Built inside the Multus source snapshot, offline, from its vendor tree (libcni v1.1.2), by
// test/support/go-cniargs.ts.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"

	cnitypes "github.com/containernetworking/cni/pkg/types"
)

// K8sArgs is Multus v4.0.2's (pkg/types/types.go), field for field: its fields are the keys
// LoadArgs knows. Importing Multus's package would build half of client-go.
type K8sArgs struct {
	cnitypes.CommonArgs
	IP                         net.IP
	K8S_POD_NAME               cnitypes.UnmarshallableString //revive:disable-line
	K8S_POD_NAMESPACE          cnitypes.UnmarshallableString //revive:disable-line
	K8S_POD_INFRA_CONTAINER_ID cnitypes.UnmarshallableString //revive:disable-line
	K8S_POD_UID                cnitypes.UnmarshallableString //revive:disable-line
}

// loaded is what LoadArgs set; IP as net.IP prints it ("" when unset).
type loaded struct {
	IgnoreUnknown              bool   `json:"IgnoreUnknown"`
	IP                         string `json:"IP"`
	K8S_POD_NAME               string `json:"K8S_POD_NAME"`               //revive:disable-line
	K8S_POD_NAMESPACE          string `json:"K8S_POD_NAMESPACE"`          //revive:disable-line
	K8S_POD_INFRA_CONTAINER_ID string `json:"K8S_POD_INFRA_CONTAINER_ID"` //revive:disable-line
	K8S_POD_UID                string `json:"K8S_POD_UID"`                //revive:disable-line
}

func load(raw string) map[string]interface{} {
	var args K8sArgs
	if err := cnitypes.LoadArgs(raw, &args); err != nil {
		return map[string]interface{}{"error": err.Error()}
	}
	out := loaded{
		IgnoreUnknown:              bool(args.IgnoreUnknown),
		K8S_POD_NAME:               string(args.K8S_POD_NAME),
		K8S_POD_NAMESPACE:          string(args.K8S_POD_NAMESPACE),
		K8S_POD_INFRA_CONTAINER_ID: string(args.K8S_POD_INFRA_CONTAINER_ID),
		K8S_POD_UID:                string(args.K8S_POD_UID),
	}
	if args.IP != nil {
		out.IP = args.IP.String()
	}
	return map[string]interface{}{"args": out}
}

func loadLines() error {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var raw string
		if err := json.Unmarshal(in.Bytes(), &raw); err != nil {
			return err
		}
		if err := out.Encode(load(raw)); err != nil {
			return err
		}
	}
	return in.Err()
}

func main() {
	if err := loadLines(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
