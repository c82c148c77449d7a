import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.temporal.internal.testservice.GRPCServerHelper;
import io.temporal.internal.testservice.TestServicesStarter;
import java.util.concurrent.TimeUnit;

/**
 * The Temporal time-skipping test server as io.temporal.testserver.TestServer starts it (same
 * arguments: {@code <port> [--enable-time-skipping]}), with one difference: it accepts the
 * clients' keepalive pings.
 *
 * <p>Why: grpc-java's default is to allow a ping at most every 5 minutes, and none while the
 * connection has no call. The TypeScript client pings every 30 s, idle or not, so a test file
 * that runs longer than about a minute and a half gets GOAWAY "too_many_pings"; a call in flight
 * on that connection then hangs until the client's next keepalive (raised to 60 s by then) times
 * out, and a test that awaited it fails on its timeout (seen as a 77 s supersede test).
 */
public final class KonfidenceTestServer {
  public static void main(String[] args) throws Exception {
    if (args.length < 1 || args.length > 2) {
      System.err.println("Usage: KonfidenceTestServer <port> [--enable-time-skipping]");
      System.exit(2);
    }
    int port = Integer.parseInt(args[0]);
    boolean timeSkipping = args.length == 2 && args[1].equalsIgnoreCase("--enable-time-skipping");
    if (args.length == 2 && !timeSkipping) {
      System.err.println("Unknown flag " + args[1]);
      System.exit(2);
    }
    // As TestServer.main: time skipping starts locked unless asked for; clients unlock it.
    TestServicesStarter services = new TestServicesStarter(!timeSkipping, 0);
    NettyServerBuilder builder =
        NettyServerBuilder.forPort(port)
            .permitKeepAliveTime(1, TimeUnit.SECONDS)
            .permitKeepAliveWithoutCalls(true);
    GRPCServerHelper.registerServicesAndHealthChecks(services.getServices(), builder);
    Server server = builder.build().start();
    Runtime.getRuntime()
        .addShutdownHook(
            new Thread(
                () -> {
                  server.shutdownNow();
                  services.close();
                }));
    server.awaitTermination();
  }
}
