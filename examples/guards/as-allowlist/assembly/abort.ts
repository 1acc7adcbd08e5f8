// The guard's abort: AssemblyScript's default one is an env import the host
// would refuse. asconfig.json points "use abort" here.

@external("extism:host/user", "warden_log")
declare function warden_log(msg: u64): void;

import { Memory } from "@extism/as-pdk";

// guardAbort logs where the guard failed and traps; the host turns the trap
// into PLUGIN_TRAP and applies the guard's failure policy (closed unless the
// skill says otherwise).
export function guardAbort(message: string | null, fileName: string | null = null, line: u32 = 0, column: u32 = 0): void {
  let m = "abort";
  if (message !== null) m += ": " + message;
  if (fileName !== null) m += " at " + fileName + ":" + line.toString() + ":" + column.toString();
  warden_log(Memory.allocateString(m).offset);
  unreachable();
}
