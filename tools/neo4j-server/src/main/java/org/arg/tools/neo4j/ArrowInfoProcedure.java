package org.arg.tools.neo4j;

import java.util.List;
import java.util.stream.Stream;
import org.neo4j.procedure.Description;
import org.neo4j.procedure.Mode;
import org.neo4j.procedure.Procedure;

/**
 * `gds.debug.arrow` for the open GDS, which lacks it: the Python client `graphdatascience` calls it when
 * it connects (to find GDS's Arrow Flight server) and fails where it is missing. The GDS plugin that
 * Neo4j ships (docker compose's NEO4J_PLUGINS) has it and, without an Enterprise licence, answers
 * "Arrow disabled": so does this one, and the client then uses Bolt for everything.
 */
public final class ArrowInfoProcedure {
    /** The columns the client reads (the plugin's own procedure has a few more). */
    public static final class ArrowInfo {
        public final String listenAddress = "";
        public final String advertisedListenAddress = "";
        public final String serverLocation = "";
        public final boolean enabled = false;
        public final boolean running = false;
        public final List<String> versions = List.of();
    }

    @Procedure(name = "gds.debug.arrow", mode = Mode.READ)
    @Description("GDS Arrow Flight server status: disabled (open GDS; added by tools/neo4j-server).")
    public Stream<ArrowInfo> arrow() {
        return Stream.of(new ArrowInfo());
    }
}
