package recipe

import _ "embed"

// Schema is the JSON Schema of the recipe format, for editors (yaml-language-server
// and the like). A test keeps it in step with the Go types.
//
//go:embed schema.json
var Schema []byte
