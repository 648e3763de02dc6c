package sbom

import (
	"bytes"
	"testing"

	cdx "github.com/CycloneDX/cyclonedx-go"
	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdxlib"
)

// The documents are read by the formats' own reference libraries, not
// only checked against schemas: SPDX by spdx/tools-golang (parse and
// validate), CycloneDX by cyclonedx-go.
func TestReadByReferenceLibraries(t *testing.T) {
	in := sampleInput()
	spdx, err := SPDX(in)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := spdxjson.Read(bytes.NewReader(spdx))
	if err != nil {
		t.Fatalf("tools-golang cannot read the SPDX document: %v", err)
	}
	if err := spdxlib.ValidateDocument(doc); err != nil {
		t.Errorf("tools-golang refuses the SPDX document: %v", err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || len(doc.Packages) == 0 || len(doc.Files) == 0 {
		t.Errorf("SPDX document as read: version %s, %d packages, %d files", doc.SPDXVersion, len(doc.Packages), len(doc.Files))
	}
	raw, err := CycloneDX(in)
	if err != nil {
		t.Fatal(err)
	}
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(raw), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatalf("cyclonedx-go cannot read the BOM: %v", err)
	}
	if bom.SpecVersion != cdx.SpecVersion1_6 || bom.Components == nil || len(*bom.Components) == 0 {
		t.Errorf("BOM as read: spec %v, components %v", bom.SpecVersion, bom.Components)
	}
}
