package org.arg.tools.neo4j;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.neo4j.cli.AdminTool;
import org.neo4j.cli.ExecutionContext;
import org.neo4j.server.CommunityEntryPoint;

/**
 * Starts Neo4j Community the way its own launcher does (org.neo4j.server.CommunityEntryPoint with
 * --home-dir and --config-dir), after two things a throwaway server needs:
 *
 * <ul>
 *   <li>NEO4J_INITIAL_PASSWORD_FILE: the initial password of the user neo4j is read from that file and
 *       set as `neo4j-admin dbms set-initial-password` does (in this JVM, not a second one; the password
 *       never appears on a command line). It takes effect when the system database is first created.
 *   <li>NEO4J_WATCH_PID: when that process ends (the wrapper script that started the server, killed
 *       however), the server shuts down cleanly by itself rather than outliving it.
 * </ul>
 */
public final class ThrowawayServer {
    private ThrowawayServer() {}

    public static void main(String[] args) throws Exception {
        Path home = null;
        Path conf = null;
        for (String arg : args) {
            if (arg.startsWith("--home-dir=")) {
                home = Path.of(arg.substring("--home-dir=".length()));
            } else if (arg.startsWith("--config-dir=")) {
                conf = Path.of(arg.substring("--config-dir=".length()));
            }
        }
        if (home == null || conf == null) {
            System.err.println("usage: ThrowawayServer --home-dir=DIR --config-dir=DIR [neo4j server arguments]");
            System.exit(2);
        }
        String passwordFile = System.getenv("NEO4J_INITIAL_PASSWORD_FILE");
        if (passwordFile != null && !passwordFile.isEmpty()) {
            String password = Files.readString(Path.of(passwordFile)).strip();
            int status = AdminTool.execute(
                    new ExecutionContext(home, conf), "dbms", "set-initial-password", password);
            if (status != 0) {
                System.err.println("set-initial-password failed with status " + status);
                System.exit(status);
            }
        }
        String watchPid = System.getenv("NEO4J_WATCH_PID");
        if (watchPid != null && !watchPid.isEmpty()) {
            long pid = Long.parseLong(watchPid.strip());
            Thread watchdog = new Thread(() -> {
                while (alive(pid)) {
                    try {
                        Thread.sleep(1000);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                System.err.println("process " + pid + " ended: stopping the server");
                System.exit(0); // runs Neo4j's shutdown hook: a clean stop
            }, "arg-neo4j-watchdog");
            watchdog.setDaemon(true);
            watchdog.start();
        }
        CommunityEntryPoint.main(args);
    }

    /** Whether the process runs: exists and is no zombie (a killed child its parent has not reaped). */
    static boolean alive(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
            int end = stat.lastIndexOf(')'); // the state follows the command name, which may hold spaces
            return end < 0 || end + 2 >= stat.length() || stat.charAt(end + 2) != 'Z';
        } catch (IOException e) { // no such process, or no /proc
            return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
        }
    }
}
