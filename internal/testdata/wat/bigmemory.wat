;; A valid guard that declares 2000 pages (125 MiB) of initial memory, over
;; the default cap of 1024.
(module
  (memory (export "memory") 2000)
  (data (i32.const 16) "{\"name\":\"bigmemory\",\"version\":\"1.0.0\",\"abi\":1,\"role\":\"guard\",\"phases\":[\"before\"]}")
  (func (export "warden_abi_version") (result i32) i32.const 1)
  (func (export "warden_manifest") (result i64)
    (i64.or (i64.shl (i64.const 16) (i64.const 32)) (i64.const 81)))
  (func (export "warden_input") (param i32) (result i32) i32.const 4096)
  (func (export "warden_handle") (param i32)))
