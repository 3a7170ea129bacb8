package dev.handoff.consumer.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.handoff.core.RedisAcl;
import dev.handoff.core.internal.LuaScript;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Every command the consumers' Lua scripts call is granted by the rule of whoever runs the script: a script added or
 * changed without its permission fails here, not in production with a refusal.
 */
class ScriptPermissionsTest {

  @Test
  void theStreamConsumersScriptsCallOnlyWhatItsRuleGrants() {
    assertGranted(RedisAcl.streamConsumer("handoff"), PendingEntryScripts.scripts());
    assertThat(PendingEntryScripts.scripts()).extracting(LuaScript::name)
        .containsExactly("stream-renew", "stream-defer", "stream-delivery-counts", "stream-delete-idle-consumer");
  }

  @Test
  void theListConsumersScriptsCallOnlyWhatItsRuleGrants() {
    assertGranted(RedisAcl.listConsumer("handoff"), ListQueues.consumerScripts());
  }

  @Test
  void theStatusScriptsCallOnlyWhatTheOperatorsRuleGrants() {
    assertGranted(RedisAcl.operator("handoff"), StreamInspector.scripts());
    assertGranted(RedisAcl.operator("handoff"), ListQueues.statusScripts());
  }

  @Test
  void aScriptKnowsItsCommandsLineByLineWithSubcommands() {
    LuaScript deleteIdle = PendingEntryScripts.scripts().get(3);
    assertThat(deleteIdle.commands()).containsExactly("XGROUP|DELCONSUMER", "XPENDING");
  }

  private static void assertGranted(String rule, List<LuaScript> scripts) {
    for (LuaScript script : scripts) {
      assertThat(script.commands()).as("%s", script).isNotEmpty();
      assertThat(RedisAcl.commands(rule)).as("commands of %s", script).containsAll(script.commands());
    }
  }
}
