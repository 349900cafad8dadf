import type { DescService } from "@bufbuild/protobuf";
import type { ServiceHandlers } from "./handlers.ts";
import type { Catalog, Group } from "./catalog.ts";

/**
 * The versioned adapters of one group: for every served version, a function from the group's
 * version-agnostic service to that version's RPC handlers. The compiler demands every RPC of every
 * version, so no method can go unserved.
 */
export type GroupAdapters<G extends Group, Service> = {
  [V in keyof Catalog[G]]: (service: Service) => Catalog[G][V] extends DescService ? ServiceHandlers<Catalog[G][V]> : never;
};
