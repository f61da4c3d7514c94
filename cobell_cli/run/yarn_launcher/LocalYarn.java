/*
 * cobell's local YARN: one ResourceManager and N NodeManagers in this JVM, on 127.0.0.1.
 *
 * Run with no build step (Java 17):
 *
 *   java -cp "<conf dir>:<jar dir>/*" LocalYarn.java <base dir> <label of NM 1> ... <label of NM n>
 *
 * The configuration comes from the classpath: <conf dir> holds the yarn-site.xml,
 * core-site.xml and capacity-scheduler.xml that cobell wrote (cobell_cli/run/local_yarn.py),
 * with port 0 for every ResourceManager address. Each NodeManager gets its own directories
 * under <base dir>/nm-<i> and ephemeral ports; a label "-" means the default partition, any
 * other label an exclusive partition of that name (the same NodeManagers a real cluster's
 * `yarn rmadmin -replaceLabelsOnNode` would label).
 *
 * Once every NodeManager is RUNNING at the ResourceManager and labelled, the addresses the
 * ResourceManager really bound are written into <conf dir>/yarn-site.xml (so spark-submit and
 * cobell read the live cluster from HADOOP_CONF_DIR) and then <base dir>/ready.json, the
 * signal cobell waits for. SIGTERM stops the NodeManagers (killing their containers), then
 * the ResourceManager. With -Dcobell.parent.pid=P it also stops when process P is gone, so
 * a test session that dies leaves no cluster behind.
 */

import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.NodeLabel;
import org.apache.hadoop.yarn.api.records.NodeState;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.nodemanager.NodeManager;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.rmnode.RMNode;

public class LocalYarn {
  static final String[] RM_ADDRESSES = {
    "yarn.resourcemanager.address",
    "yarn.resourcemanager.scheduler.address",
    "yarn.resourcemanager.resource-tracker.address",
    "yarn.resourcemanager.admin.address",
  };
  static final String WEBAPP = "yarn.resourcemanager.webapp.address";
  static final long START = System.currentTimeMillis();

  public static void main(String[] args) {
    try {
      run(args);
    } catch (Throwable e) {
      // the daemons' own threads would keep a failed start alive: end it, so cobell sees it
      System.err.println("LocalYarn: start-up failed");
      e.printStackTrace();
      System.exit(1);
    }
  }

  static void run(String[] args) throws Exception {
    if (args.length < 2) {
      System.err.println("usage: LocalYarn.java <base dir> <label of NM 1> [<label of NM 2> ...]");
      System.exit(2);
    }
    File base = new File(args[0]).getAbsoluteFile();
    List<String> labels = new ArrayList<>();
    for (int i = 1; i < args.length; i++) labels.add(args[i].equals("-") ? "" : args[i]);

    DefaultMetricsSystem.setMiniClusterMode(true); // several NodeManagers share one JVM
    ResourceManager rm = new ResourceManager();
    List<NodeManager> nms = new CopyOnWriteArrayList<>();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> stopAll(rm, nms)));
    watchParent();

    rm.init(new YarnConfiguration());
    rm.start();
    Configuration rmConf = rm.getConfig();
    // The web app was asked for port 0; tracking URLs (/proxy/<app>/) need the bound one.
    int port = webappPort(rm);
    rmConf.set(WEBAPP, "127.0.0.1:" + port);
    forgetProxyAddress(rm, rmConf, port);
    say("ResourceManager up at http://" + rmConf.get(WEBAPP));

    ExecutorService pool = Executors.newFixedThreadPool(labels.size());
    List<Future<NodeManager>> starting = new ArrayList<>();
    for (int i = 0; i < labels.size(); i++) {
      final int index = i;
      starting.add(pool.submit(() -> startNodeManager(rmConf, base, index)));
    }
    for (Future<NodeManager> f : starting) nms.add(f.get());
    pool.shutdown();

    Map<NodeId, String> nodeLabels = waitForNodes(rm, nms, labels);
    applyLabels(rm, nodeLabels);
    say(nms.size() + " NodeManagers running: " + nodeLabels);

    writeClientConf(rmConf);
    writeReady(base, rmConf, nodeLabels);
    say("ready after " + (System.currentTimeMillis() - START) + " ms");
    Thread.currentThread().join();
  }

  static void say(String line) {
    System.out.println("LocalYarn: " + line);
    System.out.flush();
  }

  static int webappPort(ResourceManager rm) throws Exception {
    Method getter = ResourceManager.class.getDeclaredMethod("getWebapp");
    getter.setAccessible(true);
    Object webapp = getter.invoke(rm);
    return (Integer) webapp.getClass().getMethod("port").invoke(webapp);
  }

  /**
   * The RM's context caches the proxy address (host:port of /proxy/<app>/ tracking URLs) the
   * first time it is asked; drop what it may have cached with port 0 and check the new one.
   */
  static void forgetProxyAddress(ResourceManager rm, Configuration conf, int port)
      throws Exception {
    Object context = rm.getRMContext();
    Field cached = context.getClass().getDeclaredField("proxyHostAndPort");
    cached.setAccessible(true);
    cached.set(context, null);
    Method getter = context.getClass().getDeclaredMethod("getProxyHostAndPort", Configuration.class);
    getter.setAccessible(true);
    String proxy = (String) getter.invoke(context, conf);
    if (!proxy.endsWith(":" + port)) {
      throw new IllegalStateException("the RM's proxy address is " + proxy + ", not port " + port);
    }
  }

  static NodeManager startNodeManager(Configuration rmConf, File base, int index) {
    YarnConfiguration conf = new YarnConfiguration(rmConf);
    File dir = new File(base, "nm-" + (index + 1));
    conf.set("yarn.nodemanager.local-dirs", new File(dir, "local").getPath());
    conf.set("yarn.nodemanager.log-dirs", new File(dir, "logs").getPath());
    conf.set("yarn.nodemanager.recovery.dir", new File(dir, "recovery").getPath());
    for (String key : new String[] {
        "yarn.nodemanager.address", "yarn.nodemanager.localizer.address",
        "yarn.nodemanager.webapp.address", "yarn.nodemanager.collector-service.address",
        "yarn.nodemanager.amrmproxy.address"}) {
      conf.set(key, "127.0.0.1:0");
    }
    NodeManager nm = new NodeManager();
    nm.init(conf);
    nm.start();
    return nm;
  }

  /** Every NodeManager RUNNING at the RM, each with the label it was started for. */
  static Map<NodeId, String> waitForNodes(ResourceManager rm, List<NodeManager> nms,
      List<String> labels) throws InterruptedException {
    Map<NodeId, String> byNode = new HashMap<>();
    for (int i = 0; i < nms.size(); i++) {
      NodeId id = null;
      while (id == null) {
        id = nms.get(i).getNMContext().getNodeId();
        if (id == null || id.getPort() == 0) {
          id = null;
          Thread.sleep(100);
        }
      }
      byNode.put(id, labels.get(i));
    }
    while (true) {
      int running = 0;
      for (NodeId id : byNode.keySet()) {
        RMNode node = rm.getRMContext().getRMNodes().get(id);
        if (node != null && node.getState() == NodeState.RUNNING) running++;
      }
      if (running == byNode.size()) return byNode;
      Thread.sleep(100);
    }
  }

  static void applyLabels(ResourceManager rm, Map<NodeId, String> byNode) throws Exception {
    Set<String> names = new LinkedHashSet<>(byNode.values());
    names.remove("");
    if (names.isEmpty()) return;
    List<NodeLabel> exclusive = new ArrayList<>();
    for (String name : names) exclusive.add(NodeLabel.newInstance(name, true));
    var manager = rm.getRMContext().getNodeLabelManager();
    manager.addToCluserNodeLabels(exclusive);
    Map<NodeId, Set<String>> mapping = new HashMap<>();
    for (Map.Entry<NodeId, String> e : byNode.entrySet()) {
      if (!e.getValue().isEmpty()) mapping.put(e.getKey(), Set.of(e.getValue()));
    }
    manager.replaceLabelsOnNode(mapping);
  }

  /** yarn-site.xml on the classpath, with the addresses the RM really bound. */
  static void writeClientConf(Configuration rmConf) throws Exception {
    URL url = Thread.currentThread().getContextClassLoader().getResource("yarn-site.xml");
    Path site = new File(url.toURI()).toPath();
    Configuration out = new Configuration(false);
    out.addResource(new org.apache.hadoop.fs.Path(site.toUri()));
    for (String key : RM_ADDRESSES) {
      out.set(key, "127.0.0.1:" + rmConf.getSocketAddr(key, "127.0.0.1:0", 0).getPort());
    }
    out.set(WEBAPP, rmConf.get(WEBAPP));
    Path tmp = site.resolveSibling("yarn-site.xml.tmp");
    try (OutputStream stream = new FileOutputStream(tmp.toFile())) {
      out.writeXml(stream);
    }
    Files.move(tmp, site, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  static void writeReady(File base, Configuration rmConf, Map<NodeId, String> byNode)
      throws Exception {
    StringBuilder nodes = new StringBuilder();
    for (Map.Entry<NodeId, String> e : byNode.entrySet()) {
      if (nodes.length() > 0) nodes.append(", ");
      nodes.append("{\"id\": \"").append(e.getKey()).append("\", \"label\": \"")
          .append(e.getValue()).append("\"}");
    }
    String json = "{\"webapp\": \"" + rmConf.get(WEBAPP) + "\", \"pid\": "
        + ProcessHandle.current().pid() + ", \"started_ms\": " + START
        + ", \"ready_ms\": " + System.currentTimeMillis() + ", \"nodes\": [" + nodes + "]}\n";
    Path ready = new File(base, "ready.json").toPath();
    Path tmp = new File(base, "ready.json.tmp").toPath();
    Files.writeString(tmp, json);
    Files.move(tmp, ready, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  static void watchParent() {
    String parent = System.getProperty("cobell.parent.pid");
    if (parent == null || parent.isEmpty()) return;
    long pid = Long.parseLong(parent);
    Thread watcher = new Thread(() -> {
      while (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
        try {
          Thread.sleep(1000);
        } catch (InterruptedException e) {
          return;
        }
      }
      say("parent process " + pid + " is gone: stopping");
      System.exit(0); // runs the shutdown hook
    }, "parent-watcher");
    watcher.setDaemon(true);
    watcher.start();
  }

  /**
   * The NodeManagers side by side, then the ResourceManager: a NodeManager's stop waits up to
   * seconds for the containers of apps still running there (process-kill-wait), so one after
   * another the waits would add up.
   */
  static void stopAll(ResourceManager rm, List<NodeManager> nms) {
    long t0 = System.currentTimeMillis();
    List<Thread> stopping = new ArrayList<>();
    for (NodeManager nm : nms) {
      Thread thread = new Thread(() -> {
        try {
          nm.stop();
        } catch (RuntimeException e) {
          System.err.println("LocalYarn: stopping a NodeManager: " + e);
        }
      }, "stop-" + nm.getName());
      thread.start();
      stopping.add(thread);
    }
    for (Thread thread : stopping) {
      try {
        thread.join();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    try {
      rm.stop();
    } catch (RuntimeException e) {
      System.err.println("LocalYarn: stopping the ResourceManager: " + e);
    }
    say("stopped in " + (System.currentTimeMillis() - t0) + " ms");
  }
}
