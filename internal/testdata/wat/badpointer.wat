;; A valid guard whose handler passes an out-of-bounds pointer to the host.
(module
  (import "warden" "success" (func $success (param i32 i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "{\"name\":\"badpointer\",\"version\":\"1.0.0\",\"abi\":1,\"role\":\"guard\",\"phases\":[\"before\"]}")
  (func (export "warden_abi_version") (result i32) i32.const 1)
  (func (export "warden_manifest") (result i64)
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const 82)))
  (func (export "warden_input") (param i32) (result i32) i32.const 4096)
  (func (export "warden_handle") (param i32)
    (call $success (i32.const 0xFFFFF000) (i32.const 1000) (i32.const 0) (i32.const 0))))
