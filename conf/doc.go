// Package conf reads goxio's configuration the way NVIDIA VMA reads its own:
// libvma.conf rule files (which sockets are offloaded and which are left to
// the kernel) and the VMA_* parameters (from the environment, a VMA_SPEC
// profile and an optional TOML file).
//
// The package is deterministic: it reads only the files it is given, never
// consults the clock, the process or the network, and reports every problem as
// a returned value (an error or a Warning) for the caller to print once.
//
// Rules: ParseRules and LoadRules build a RuleSet; RuleSet.Match decides, for
// a socket's role and addresses, whether it is offloaded (TargetVMA) or left
// to the kernel (TargetOS), and which rule decided.
//
// Parameters: Load merges defaults, the VMA_SPEC profile, the TOML file named
// by GOXIO_PARAMS_FILE, VMA_* and GOXIO_* environment variables (in that order
// of precedence) into a typed Params.
package conf
