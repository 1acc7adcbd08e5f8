package env

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"strconv"

	"github.com/agentwarden/warden/abi"
)

var hashSpec = abi.ToolSpec{
	Name: ToolHash,
	Description: "Hashes the UTF-8 bytes of input and returns lowercase hex. algorithm is MD5, SHA1, SHA256 (default) or SHA512; " +
		"length keeps only the first length hex digits. MD5 and SHA1 are for checksums and legacy identifiers, not security.",
	InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["input"],"properties":{` +
		`"input":{"type":"string"},` +
		`"algorithm":{"type":"string","enum":["MD5","SHA1","SHA256","SHA512"],"default":"SHA256"},` +
		`"length":{"type":"integer","minimum":1,"maximum":128,"description":"hex digits to keep, at most the digest's length (32, 40, 64, 128)"}}}`),
}

var algorithms = []string{"MD5", "SHA1", "SHA256", "SHA512"}

var hexLen = map[string]int64{"MD5": 32, "SHA1": 40, "SHA256": 64, "SHA512": 128}

func hash(x *call) {
	input, _ := x.str("input", true)
	alg, okAlg := x.enum("algorithm", algorithms, "SHA256")
	length, hasLength := x.integer("length", false, 1, 128)
	if okAlg && hasLength && length > hexLen[alg] {
		x.bad("length", alg+" 的摘要只有 "+strconv.FormatInt(hexLen[alg], 10)+" 位十六进制",
			"an "+alg+" digest has only "+strconv.FormatInt(hexLen[alg], 10)+" hex digits")
	}
	if x.rejected() {
		return
	}
	var sum []byte
	switch alg {
	case "MD5":
		s := md5.Sum([]byte(input))
		sum = s[:]
	case "SHA1":
		s := sha1.Sum([]byte(input))
		sum = s[:]
	case "SHA512":
		s := sha512.Sum512([]byte(input))
		sum = s[:]
	default:
		s := sha256.Sum256([]byte(input))
		sum = s[:]
	}
	h := hex.EncodeToString(sum)
	if hasLength {
		h = h[:length]
	}
	x.c.Success(x.text(alg+" 哈希："+h, alg+" hash: "+h), newObject().str("hash", h).str("algorithm", alg).bytes())
}
